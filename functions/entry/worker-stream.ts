/**
 * The response with `onDone` called once its body was fully sent or the client went
 * away (or at once when there is no body). Workers bind a TCP socket to the request
 * that opened it, so the database connection must live exactly as long as the
 * response, event streams included.
 */
export function whenResponseDone(
  response: Response,
  onDone: () => Promise<void>,
): {
  response: Response;
  done: Promise<void>;
} {
  if (response.body === null) return { response, done: onDone() };
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          finish();
        } else controller.enqueue(value);
      } catch (error) {
        controller.error(error);
        finish();
      }
    },
    async cancel(reason) {
      await reader.cancel(reason).catch(() => {});
      finish();
    },
  });
  return {
    response: new Response(body, response),
    done: finished.then(onDone),
  };
}
