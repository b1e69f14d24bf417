import { ConsoleApiError } from "./console-api.ts";

/**
 * A presigned PUT with upload progress. `fetch` reports no upload progress in browsers, so
 * this one call uses XMLHttpRequest.
 */
export function putWithProgress(
  url: string,
  body: Blob,
  headers: Record<string, string>,
  onProgress: (loaded: number) => void,
): Promise<void> {
  return new Promise((done, fail) => {
    const xhr = new XMLHttpRequest();
    xhr.open("PUT", url);
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(body.size);
        done();
      } else {
        fail(
          new ConsoleApiError(
            "upload_failed",
            `Upload refused (${xhr.status}): ${xhr.responseText.slice(0, 200)}`,
            xhr.status,
          ),
        );
      }
    };
    xhr.onerror = () =>
      fail(new ConsoleApiError("network", "The upload did not reach storage; try again.", 0));
    xhr.send(body);
  });
}
