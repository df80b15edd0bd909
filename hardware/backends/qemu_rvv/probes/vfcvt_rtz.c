/* Probe: one RVV 1.0 vfcvt.rtz.x.f.v (f32 -> i32, round toward zero) and nothing else vector.
 * A correct emulator prints "ok -3 2 -1 0"; qemu-user 7.2 aborts in its translator
 * (target/riscv/translate.c decode_save_opc: Assertion `ctx->insn_start != NULL'). */
#include <stdio.h>
int main(void) {
  float in[4] = {-3.75f, 2.5f, -1.25f, 0.5f};
  int out[4] = {9, 9, 9, 9};
  __asm__ volatile(
      "vsetivli zero, 4, e32, m1, ta, ma\n"
      "vle32.v v8, (%0)\n"
      "vfcvt.rtz.x.f.v v8, v8\n"
      "vse32.v v8, (%1)\n" ::"r"(in), "r"(out) : "memory", "v8");
  printf("ok %d %d %d %d\n", out[0], out[1], out[2], out[3]);
  return 0;
}
