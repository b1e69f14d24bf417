// The process tier's seccomp filter: a classic-BPF program built here (no maintained
// seccomp package exists for Node) and handed to bubblewrap on an fd (`--seccomp FD`),
// which loads it as the last step before exec'ing the command, with no_new_privs set.
//
// The sandbox already runs with every capability dropped, in its own user, pid, ipc,
// uts, net and cgroup namespaces, with no host path but the declared mounts. The filter
// narrows what is left: the kernel surface an unprivileged process can still reach and
// that has a history of privilege escalations, and the calls that would undo the
// namespaces. It is a deny list (like Docker's and Flatpak's profiles are, in effect):
// an agent runs arbitrary toolchains, and an allow list breaks them in ways the model
// cannot diagnose. Each denied call fails with EPERM (so a tool reports "Operation not
// permitted" instead of dying), except a foreign architecture, which kills the process.
//
// The list, and why (docs/decisions/0027-process-tier-seccomp.md restates it):
// * namespaces: unshare, setns, and clone with any CLONE_NEW* flag. A new user
//   namespace would give the process every capability over fresh mount/net namespaces:
//   the main door to kernel bugs reachable "unprivileged". clone3 gets ENOSYS (its flags
//   are behind a pointer BPF cannot read); libc then falls back to clone, which is checked.
// * mounts: mount, umount2, pivot_root, chroot and the new mount API (open_tree,
//   move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr): the mount table is
//   the sandbox's boundary.
// * other processes: ptrace, process_vm_readv/writev, kcmp, pidfd_getfd.
// * kernel keyrings (keyctl, add_key, request_key): not namespaced, shared by the uid.
// * bpf, perf_event_open, userfaultfd, io_uring_*: large attack surfaces, not needed by
//   an agent's tools (Docker's default profile denies them too).
// * kernel modules and kexec, reboot, swapon/swapoff, acct, quotactl, syslog,
//   lookup_dcookie, iopl/ioperm, the obsolete module/sysctl calls.
// * clocks: settimeofday, clock_settime, clock_adjtime, adjtimex (the clock is global).
// * open_by_handle_at / name_to_handle_at: file handles bypass the mount boundary
//   ("shocker").
// * ioctl TIOCSTI / TIOCLINUX: injecting input into a terminal the sandbox might share.
// * socket families other than AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK: AF_VSOCK is
//   not network-namespaced (it reaches the hypervisor host), and the rest (packet,
//   bluetooth, rds, tipc, …) are rarely used kernel code. AF_UNIX itself stays allowed:
//   the net namespace scopes abstract sockets, so the host's (dockerd's, systemd's) are
//   out of reach, and no host socket file is mounted; a socket bound in the
//   UserWorkspace is only reachable by the same user's sandboxes.
// * the x32 ABI (syscall numbers with bit 30 set): a second syscall table that filters
//   written for x86_64 numbers would otherwise miss.

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_JSET_K = 0x45;
const BPF_RET_K = 0x06;

const SECCOMP_RET_KILL_PROCESS = 0x80000000;
const SECCOMP_RET_ERRNO = 0x00050000;
const SECCOMP_RET_ALLOW = 0x7fff0000;

const EPERM = 1;
const ENOSYS = 38;
const EAFNOSUPPORT = 97;

/** offsetof(struct seccomp_data, …) */
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
/** Low 32 bits of args[i] (little-endian). */
const argLow = (i: number) => 16 + 8 * i;

const X32_SYSCALL_BIT = 0x40000000;

/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET */
const CLONE_NAMESPACE_FLAGS =
  0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;

const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;

const AF_UNIX = 1;
const AF_INET = 2;
const AF_INET6 = 10;
const AF_NETLINK = 16;

type SyscallTable = {
  auditArch: number;
  /** True when numbers with bit 30 set are a second ABI (x32) to refuse. */
  hasX32: boolean;
  clone: number;
  clone3: number;
  ioctl: number;
  socket: number;
  denied: Readonly<Record<string, number>>;
};

/** x86_64 numbers (arch/x86/entry/syscalls/syscall_64.tbl). */
const X86_64: SyscallTable = {
  auditArch: 0xc000003e,
  hasX32: true,
  clone: 56,
  clone3: 435,
  ioctl: 16,
  socket: 41,
  denied: {
    unshare: 272,
    setns: 308,
    mount: 165,
    umount2: 166,
    pivot_root: 155,
    chroot: 161,
    open_tree: 428,
    move_mount: 429,
    fsopen: 430,
    fsconfig: 431,
    fsmount: 432,
    fspick: 433,
    mount_setattr: 442,
    ptrace: 101,
    process_vm_readv: 310,
    process_vm_writev: 311,
    kcmp: 312,
    pidfd_getfd: 438,
    keyctl: 250,
    add_key: 248,
    request_key: 249,
    bpf: 321,
    perf_event_open: 298,
    userfaultfd: 323,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
    init_module: 175,
    finit_module: 313,
    delete_module: 176,
    create_module: 174,
    get_kernel_syms: 177,
    query_module: 178,
    kexec_load: 246,
    kexec_file_load: 320,
    reboot: 169,
    swapon: 167,
    swapoff: 168,
    acct: 163,
    quotactl: 179,
    quotactl_fd: 443,
    syslog: 103,
    lookup_dcookie: 212,
    iopl: 172,
    ioperm: 173,
    _sysctl: 156,
    uselib: 134,
    nfsservctl: 180,
    settimeofday: 164,
    clock_settime: 227,
    clock_adjtime: 305,
    adjtimex: 159,
    open_by_handle_at: 304,
    name_to_handle_at: 303,
  },
};

/** aarch64 numbers (include/uapi/asm-generic/unistd.h); no x32-like second ABI. */
const ARM64: SyscallTable = {
  auditArch: 0xc00000b7,
  hasX32: false,
  clone: 220,
  clone3: 435,
  ioctl: 29,
  socket: 198,
  denied: {
    unshare: 97,
    setns: 268,
    mount: 40,
    umount2: 39,
    pivot_root: 41,
    chroot: 51,
    open_tree: 428,
    move_mount: 429,
    fsopen: 430,
    fsconfig: 431,
    fsmount: 432,
    fspick: 433,
    mount_setattr: 442,
    ptrace: 117,
    process_vm_readv: 270,
    process_vm_writev: 271,
    kcmp: 272,
    pidfd_getfd: 438,
    keyctl: 219,
    add_key: 217,
    request_key: 218,
    bpf: 280,
    perf_event_open: 241,
    userfaultfd: 282,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
    init_module: 105,
    finit_module: 273,
    delete_module: 106,
    kexec_load: 104,
    kexec_file_load: 294,
    reboot: 142,
    swapon: 224,
    swapoff: 225,
    acct: 89,
    quotactl: 60,
    quotactl_fd: 443,
    syslog: 116,
    lookup_dcookie: 18,
    nfsservctl: 42,
    settimeofday: 170,
    clock_settime: 112,
    clock_adjtime: 266,
    adjtimex: 171,
    open_by_handle_at: 265,
    name_to_handle_at: 264,
  },
};

const TABLES: Readonly<Partial<Record<NodeJS.Architecture, SyscallTable>>> = {
  x64: X86_64,
  arm64: ARM64,
};

/** The names of the calls the filter refuses outright (tests and the decision record). */
export function deniedSyscalls(arch: NodeJS.Architecture = process.arch): string[] {
  return Object.keys(tableFor(arch).denied);
}

/** Whether this architecture has a syscall table here (preflight reports it). */
export function seccompSupported(arch: NodeJS.Architecture = process.arch): boolean {
  return TABLES[arch] !== undefined;
}

/**
 * The filter as bubblewrap reads it from `--seccomp FD`: an array of
 * `struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; }`, little-endian.
 */
export function buildSeccompFilter(arch: NodeJS.Architecture = process.arch): Buffer {
  const t = tableFor(arch);
  const p = new Program();
  p.load(OFFSET_ARCH);
  p.jumpUnless(BPF_JEQ_K, t.auditArch, [ret(SECCOMP_RET_KILL_PROCESS)]);
  p.load(OFFSET_NR);
  if (t.hasX32) p.when(BPF_JGE_K, X32_SYSCALL_BIT, [ret(errno(EPERM))]);
  for (const nr of Object.values(t.denied)) p.when(BPF_JEQ_K, nr, [ret(errno(EPERM))]);
  p.when(BPF_JEQ_K, t.clone3, [ret(errno(ENOSYS))]);
  // The argument checks load args into the accumulator, so each ends in a verdict
  // (allow or refuse) instead of falling through to compare syscall numbers again.
  p.when(BPF_JEQ_K, t.clone, [
    ld(argLow(0)),
    jump(BPF_JSET_K, CLONE_NAMESPACE_FLAGS, 0, 1),
    ret(errno(EPERM)),
    ret(SECCOMP_RET_ALLOW),
  ]);
  p.when(BPF_JEQ_K, t.ioctl, [
    ld(argLow(1)),
    jump(BPF_JEQ_K, TIOCSTI, 2, 0),
    jump(BPF_JEQ_K, TIOCLINUX, 1, 0),
    ret(SECCOMP_RET_ALLOW),
    ret(errno(EPERM)),
  ]);
  p.when(BPF_JEQ_K, t.socket, [
    ld(argLow(0)),
    jump(BPF_JEQ_K, AF_UNIX, 4, 0),
    jump(BPF_JEQ_K, AF_INET, 3, 0),
    jump(BPF_JEQ_K, AF_INET6, 2, 0),
    jump(BPF_JEQ_K, AF_NETLINK, 1, 0),
    ret(errno(EAFNOSUPPORT)),
    ret(SECCOMP_RET_ALLOW),
  ]);
  p.push(ret(SECCOMP_RET_ALLOW));
  return p.encode();
}

function tableFor(arch: NodeJS.Architecture): SyscallTable {
  const table = TABLES[arch];
  if (!table) {
    throw new Error(
      `the process tier has no seccomp syscall table for ${arch}: use the container tier on this node`,
    );
  }
  return table;
}

type Insn = { code: number; jt: number; jf: number; k: number };

const ld = (offset: number): Insn => ({ code: BPF_LD_W_ABS, jt: 0, jf: 0, k: offset });
const ret = (k: number): Insn => ({ code: BPF_RET_K, jt: 0, jf: 0, k });
const jump = (code: number, k: number, jt: number, jf: number): Insn => ({ code, jt, jf, k });
const errno = (n: number) => SECCOMP_RET_ERRNO | n;

class Program {
  readonly #insns: Insn[] = [];

  push(...insns: Insn[]): void {
    this.#insns.push(...insns);
  }

  load(offset: number): void {
    this.push(ld(offset));
  }

  /** If `acc <op> k`, run `body` (which must end in a return); else skip it. */
  when(code: number, k: number, body: Insn[]): void {
    this.push(jump(code, k, 0, body.length), ...body);
  }

  /** Unless `acc <op> k`, run `body` (which must end in a return). */
  jumpUnless(code: number, k: number, body: Insn[]): void {
    this.push(jump(code, k, body.length, 0), ...body);
  }

  encode(): Buffer {
    const out = Buffer.alloc(this.#insns.length * 8);
    this.#insns.forEach((insn, i) => {
      out.writeUInt16LE(insn.code, i * 8);
      out.writeUInt8(insn.jt, i * 8 + 2);
      out.writeUInt8(insn.jf, i * 8 + 3);
      out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
    });
    return out;
  }
}
