import * as yauzl from "yauzl";
import { ExtractionLimitError } from "./extraction-limit-error.ts";

export interface DocxArchiveLimits {
  readonly maxInflatedBytes: number;
  readonly maxEntries: number;
}

/** Why a DOCX was refused before conversion as unreadable; becomes a 400 for the batch. */
export class DocxRejected extends Error {
  override readonly name = "DocxRejected";
}

/**
 * Zip-bomb guard for a DOCX (a zip) before mammoth opens it. mammoth's unzip (JSZip) inflates
 * entries into memory trusting their headers, and buffers are not bounded by the worker's
 * heap limit. So every entry is inflated here first, streaming and counting: yauzl
 * (validateEntrySizes) stops an entry that inflates past its declared size, and the declared
 * sizes must fit `maxInflatedBytes` together. What passes cannot expand past the bound when
 * mammoth reads it again. A bomb is an ExtractionLimitError (`extraction_limit`); a file
 * that is not a zip at all is DocxRejected (`attachment_unparseable`).
 */
export async function checkDocxArchive(bytes: Buffer, limits: DocxArchiveLimits): Promise<void> {
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.fromBufferPromise(bytes, {
      lazyEntries: true,
      autoClose: false,
      validateEntrySizes: true,
    });
  } catch (error) {
    throw new DocxRejected(`not a readable DOCX (zip) file: ${(error as Error).message}`);
  }
  try {
    let entries = 0;
    let declared = 0;
    for await (const entry of zip.eachEntry()) {
      entries++;
      declared += entry.uncompressedSize;
      if (entries > limits.maxEntries) {
        throw new ExtractionLimitError(`the DOCX has more than ${limits.maxEntries} parts`);
      }
      if (declared > limits.maxInflatedBytes) {
        throw new ExtractionLimitError(
          `the DOCX inflates to more than ${limits.maxInflatedBytes} bytes`,
        );
      }
      if (entry.fileName.endsWith("/")) continue;
      const stream = await zip.openReadStreamPromise(entry);
      // Drained, not kept: only the count matters, and yauzl errors on a lying size.
      for await (const _chunk of stream) {
        // nothing to keep
      }
    }
  } catch (error) {
    if (error instanceof ExtractionLimitError) throw error;
    // yauzl's validateEntrySizes: an entry inflating past the size its header declares is
    // a zip bomb that lies, stopped at the lie; a cap, like the honest bomb above.
    if (/too many bytes in the stream/.test((error as Error).message)) {
      throw new ExtractionLimitError(
        "a part of the DOCX inflates to more bytes than its header declares",
      );
    }
    throw new DocxRejected(`not a readable DOCX (zip) file: ${(error as Error).message}`);
  } finally {
    zip.close();
  }
}
