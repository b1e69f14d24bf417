import type { ComponentProps } from "react";
import Markdown, { type Components } from "react-markdown";

/**
 * An image in a previewed file becomes a link a person may choose to follow, never an
 * <img>: Workdir files are written by the agent, and a remote image would make the browser
 * fetch the agent's URL (and whatever secret it carries) just by previewing
 * (docs/decisions/0103). The console's CSP refuses such images as well; this keeps the
 * preview readable instead of showing broken images.
 */
function InertImage({ src, alt }: ComponentProps<"img">) {
  const label = `image: ${alt === undefined || alt === "" ? "(no description)" : alt}`;
  if (typeof src !== "string" || src === "") return <span className="inert-image">{label}</span>;
  return (
    <a className="inert-image" href={src} target="_blank" rel="noopener noreferrer nofollow">
      {label}
    </a>
  );
}

/** Links open elsewhere and send no Referer (the console URL names the thread). */
function OutboundLink({ href, children }: ComponentProps<"a">) {
  return (
    <a href={href} target="_blank" rel="noopener noreferrer nofollow">
      {children}
    </a>
  );
}

const COMPONENTS: Components = { img: InertImage, a: OutboundLink };

/** A Markdown file's preview: no raw HTML (react-markdown's default), no remote loads. */
export function MarkdownPreview({ text }: { text: string }) {
  return <Markdown components={COMPONENTS}>{text}</Markdown>;
}
