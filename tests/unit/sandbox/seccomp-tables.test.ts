import { describe, expect, test } from "vitest";
import {
  buildSeccompFilter,
  deniedSyscalls,
} from "../../../agent-host/sandbox/process/seccomp-filter.ts";

// The process tier's seccomp filter has one syscall table per architecture
// (agent-host/sandbox/process/seccomp-filter.ts). A call added to one table and forgotten in
// the other would leave a door open on one kind of node only, and no test machine runs
// both: so the tables are compared here, and each compiled filter is run through a small
// classic-BPF interpreter to show it refuses exactly those calls.

const ARCHES = ["x64", "arm64"] as const;

/** Calls the x86-64 kernel has and asm-generic (arm64) never had: nothing to deny there. */
const X86_64_ONLY = [
  "create_module",
  "get_kernel_syms",
  "query_module",
  "iopl",
  "ioperm",
  "_sysctl",
  "uselib",
];

/** AUDIT_ARCH_* and the argument-checked calls (syscall_64.tbl, asm-generic/unistd.h). */
const ABI = {
  x64: { auditArch: 0xc000003e, clone: 56, clone3: 435, ioctl: 16, socket: 41, read: 0 },
  arm64: { auditArch: 0xc00000b7, clone: 220, clone3: 435, ioctl: 29, socket: 198, read: 63 },
} as const;

const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const errno = (n: number) => 0x00050000 | n;
const EPERM = errno(1);
const ENOSYS = errno(38);
const EAFNOSUPPORT = errno(97);

/** What the kernel hands the filter: struct seccomp_data (nr, arch, ip, args[6]). */
function seccompData(arch: number, nr: number, args: number[] = []): Buffer {
  const data = Buffer.alloc(64);
  data.writeInt32LE(nr, 0);
  data.writeUInt32LE(arch, 4);
  args.forEach((arg, i) => {
    data.writeUInt32LE(arg >>> 0, 16 + 8 * i);
  });
  return data;
}

/** Runs a classic-BPF program of the opcodes the filter uses; returns its verdict. */
function runFilter(program: Buffer, data: Buffer): number {
  let acc = 0;
  let pc = 0;
  while (pc * 8 < program.length) {
    const at = pc * 8;
    const code = program.readUInt16LE(at);
    const jt = program.readUInt8(at + 2);
    const jf = program.readUInt8(at + 3);
    const k = program.readUInt32LE(at + 4);
    pc++;
    if (code === 0x20)
      acc = data.readUInt32LE(k); // BPF_LD | BPF_W | BPF_ABS
    else if (code === 0x06)
      return k; // BPF_RET | BPF_K
    else if (code === 0x15)
      pc += acc === k ? jt : jf; // BPF_JMP | BPF_JEQ | BPF_K
    else if (code === 0x35)
      pc += acc >= k ? jt : jf; // BPF_JMP | BPF_JGE | BPF_K
    else if (code === 0x45)
      pc += (acc & k) !== 0 ? jt : jf; // BPF_JMP | BPF_JSET | BPF_K
    else throw new Error(`opcode 0x${code.toString(16)} not interpreted here`);
  }
  throw new Error("the program ran off its end without a verdict");
}

describe("the x86-64 and arm64 seccomp tables deny the same calls", () => {
  test("every call denied on one architecture is denied on the other, where it exists", () => {
    const x64 = deniedSyscalls("x64");
    const arm64 = deniedSyscalls("arm64");
    expect(arm64.filter((name) => !x64.includes(name))).toEqual([]);
    expect(x64.filter((name) => !arm64.includes(name)).sort()).toEqual([...X86_64_ONLY].sort());
  });

  test.each(ARCHES)("the %s filter refuses each denied call, one number per name", (arch) => {
    const abi = ABI[arch];
    const filter = buildSeccompFilter(arch);
    const refused: number[] = [];
    for (let nr = 0; nr < 1024; nr++) {
      if (runFilter(filter, seccompData(abi.auditArch, nr)) === EPERM) refused.push(nr);
    }
    // Two names on one number (a typo in a table) would show here as one refusal too few.
    expect(refused).toHaveLength(deniedSyscalls(arch).length);
    expect(refused).not.toContain(abi.read);
    expect(runFilter(filter, seccompData(abi.auditArch, abi.read))).toBe(RET_ALLOW);
  });

  test.each(ARCHES)("the %s filter checks the same arguments", (arch) => {
    const abi = ABI[arch];
    const filter = buildSeccompFilter(arch);
    const verdict = (nr: number, args: number[] = []) =>
      runFilter(filter, seccompData(abi.auditArch, nr, args));
    const CLONE_NEWUSER = 0x10000000;
    const SIGCHLD = 17;
    expect(verdict(abi.clone, [SIGCHLD])).toBe(RET_ALLOW);
    expect(verdict(abi.clone, [CLONE_NEWUSER | SIGCHLD])).toBe(EPERM);
    expect(verdict(abi.clone3)).toBe(ENOSYS);
    const TIOCSTI = 0x5412;
    const TIOCLINUX = 0x541c;
    const TCGETS = 0x5401;
    expect(verdict(abi.ioctl, [0, TCGETS])).toBe(RET_ALLOW);
    expect(verdict(abi.ioctl, [0, TIOCSTI])).toBe(EPERM);
    expect(verdict(abi.ioctl, [0, TIOCLINUX])).toBe(EPERM);
    const AF_INET = 2;
    const AF_VSOCK = 40;
    const AF_PACKET = 17;
    expect(verdict(abi.socket, [AF_INET])).toBe(RET_ALLOW);
    expect(verdict(abi.socket, [AF_VSOCK])).toBe(EAFNOSUPPORT);
    expect(verdict(abi.socket, [AF_PACKET])).toBe(EAFNOSUPPORT);
  });

  test.each(ARCHES)("the %s filter kills a call of the other architecture", (arch) => {
    const other = ABI[arch === "x64" ? "arm64" : "x64"];
    expect(runFilter(buildSeccompFilter(arch), seccompData(other.auditArch, other.read))).toBe(
      RET_KILL_PROCESS,
    );
  });

  test("x86-64 refuses the x32 ABI, which arm64 does not have", () => {
    const X32_BIT = 0x40000000;
    const read = (arch: "x64" | "arm64") =>
      runFilter(buildSeccompFilter(arch), seccompData(ABI[arch].auditArch, X32_BIT | 0));
    expect(read("x64")).toBe(EPERM);
    expect(read("arm64")).toBe(RET_ALLOW);
  });
});
