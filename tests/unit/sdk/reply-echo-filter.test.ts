import { describe, expect, test } from "vitest";
import { replyEchoFilter } from "../../../sdk/cli/reply-echo-filter.ts";

// On a terminal the shell model's reply (its command's result, already printed live) is
// not printed a second time; a model's own words always are (issue 40).

function collect() {
  const out: string[] = [];
  return { out, filter: replyEchoFilter((t) => out.push(t)) };
}

describe("replyEchoFilter", () => {
  test("a reply that is the live-shown result, even in pieces, is dropped", () => {
    const { out, filter } = collect();
    filter.toolStarted();
    filter.toolCompleted("partial\n[exit code 3]", true);
    filter.delta("partial\n");
    filter.delta("[exit code 3]");
    filter.end();
    expect(out).toEqual([]);
  });

  test("words of its own after a tool call come through whole, in order", () => {
    const { out, filter } = collect();
    filter.toolCompleted("42\n", true);
    filter.delta("4");
    filter.delta("2 is the answer");
    filter.end();
    expect(out.join("")).toBe("42 is the answer");
  });

  test("a prefix of the result that ends the message is still said", () => {
    const { out, filter } = collect();
    filter.toolCompleted("hello world", true);
    filter.delta("hello");
    filter.end();
    expect(out.join("")).toBe("hello");
  });

  test("a result nobody saw live (no tool.output) is printed as the reply", () => {
    const { out, filter } = collect();
    filter.toolCompleted("wrote a.txt", false);
    filter.delta("wrote a.txt");
    filter.end();
    expect(out.join("")).toBe("wrote a.txt");
  });
});
