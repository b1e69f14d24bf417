import { type DragEvent, useRef, useState } from "react";

/**
 * An element that takes files dropped on it: spread `handlers` on it, show `dragging`.
 * Entering a child fires dragleave on the parent, so a depth count (not the last event)
 * says whether the pointer is still over the target. Drags that carry no files (text,
 * links) are not taken.
 */
export function useFileDrop(onFiles: (files: File[]) => void) {
  const [dragging, setDragging] = useState(false);
  const depth = useRef(0);
  const carriesFiles = (e: DragEvent) => Array.from(e.dataTransfer.types).includes("Files");
  const handlers = {
    onDragEnter: (e: DragEvent) => {
      if (!carriesFiles(e)) return;
      e.preventDefault();
      depth.current += 1;
      setDragging(true);
    },
    onDragOver: (e: DragEvent) => {
      // Without preventDefault the browser refuses the drop (and opens the file instead).
      if (carriesFiles(e)) e.preventDefault();
    },
    onDragLeave: (e: DragEvent) => {
      if (!carriesFiles(e)) return;
      depth.current = Math.max(0, depth.current - 1);
      if (depth.current === 0) setDragging(false);
    },
    onDrop: (e: DragEvent) => {
      if (!carriesFiles(e)) return;
      e.preventDefault();
      depth.current = 0;
      setDragging(false);
      const files = Array.from(e.dataTransfer.files);
      if (files.length > 0) onFiles(files);
    },
  };
  return { dragging, handlers };
}
