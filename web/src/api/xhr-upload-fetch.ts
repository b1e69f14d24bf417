/**
 * A `fetch` for the SDK's presigned PUTs that reports upload progress: browsers' fetch
 * reports none, XMLHttpRequest does. Everything but a PUT of a Blob goes to the real fetch.
 */
export function xhrUploadFetch(onProgress: (sent: number, body: Blob) => void): typeof fetch {
  return async (input, init) => {
    const request = input instanceof Request ? input : undefined;
    const method = (init?.method ?? request?.method ?? "GET").toUpperCase();
    const body = init?.body;
    if (method !== "PUT" || !(body instanceof Blob)) return fetch(input, init);
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    return new Promise<Response>((done, fail) => {
      const xhr = new XMLHttpRequest();
      xhr.open("PUT", url);
      for (const [name, value] of new Headers(init?.headers)) xhr.setRequestHeader(name, value);
      xhr.upload.onprogress = (e) => onProgress(e.loaded, body);
      xhr.onload = () => {
        if (xhr.status >= 200 && xhr.status < 300) onProgress(body.size, body);
        done(new Response(xhr.status === 204 ? null : xhr.responseText, { status: xhr.status }));
      };
      xhr.onerror = () => fail(new TypeError("network error during upload"));
      xhr.onabort = () => fail(new DOMException("aborted", "AbortError"));
      init?.signal?.addEventListener("abort", () => xhr.abort(), { once: true });
      xhr.send(body);
    });
  };
}
