/* Bare-metal start of the harness (FireSim, qemu-system-riscv64 -machine spike).
 *
 * Entered in M-mode at the DRAM base (0x80000000; link.ld puts .text.init first). Hart 0 runs
 * the harness, every other hart parks. Before any C code: a stack, gp, a trap vector (any
 * exception ends the run through HTIF with exit code 4, see htif.c), the FPU and the vector
 * unit switched on in mstatus (FS and VS = Initial; both are Off at reset and the first float
 * or vector instruction would trap), .bss and .tbss cleared, tp at the TLS block (picolibc keeps
 * errno in TLS). main's return value goes to exit(), which reports it through HTIF. */
#define MSTATUS_FS_INITIAL (1 << 13)
#define MSTATUS_VS_INITIAL (1 << 9)
#define MISA_V (1 << ('V' - 'A'))

  .section .text.init, "ax", @progbits
  .globl _start
_start:
  csrr t0, mhartid
  bnez t0, .Lpark
  .option push
  .option norelax
  la gp, __global_pointer$
  .option pop
  la sp, __stack_top
  la t0, accel_trap_entry
  csrw mtvec, t0
  li t0, MSTATUS_FS_INITIAL | MSTATUS_VS_INITIAL
  csrs mstatus, t0
  csrwi fcsr, 0
  /* vcsr exists only with the V extension (the novec build runs on a core without it) */
  csrr t0, misa
  li t1, MISA_V
  and t0, t0, t1
  beqz t0, 1f
  csrwi vcsr, 0
1:
  la t0, __bss_start
  la t1, __bss_end
  call .Lzero
  la t0, __tbss_start
  la t1, __tbss_end
  call .Lzero
  la tp, __tls_base
  li a0, 0
  li a1, 0
  call main
  call exit
.Lpark:
  wfi
  j .Lpark

/* zero [t0, t1); both 8-byte aligned (link.ld) */
.Lzero:
  bgeu t0, t1, 2f
  sd zero, 0(t0)
  addi t0, t0, 8
  j .Lzero
2:
  ret

/* Any trap (illegal instruction on a core without V, a bad access, ...): report and exit 4. */
  .text
  .balign 4
  .globl accel_trap_entry
accel_trap_entry:
  csrr a0, mcause
  csrr a1, mepc
  csrr a2, mtval
  call accel_trap
1:
  j 1b
