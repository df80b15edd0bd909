/* Console and exit through HTIF (tohost / fromhost), for the bare-metal harness.
 *
 * The host side -- FireSim's driver (fesvr, polling tohost over TSI/DMI) or qemu's spike
 * machine (hw/char/riscv_htif.c) -- finds ``tohost`` and ``fromhost`` by their ELF symbols;
 * qemu insists each is an 8-byte object. A tohost word is dev<<56 | cmd<<48 | payload:
 *   device 1 ("bcd" console), command 1: write the payload's low byte to the host's stdout
 *     (fesvr/device.cc bcd_t::handle_write; on FireSim that stdout is the uartlog);
 *   device 0, payload with bit 0 set: exit with code payload>>1 (FireSim prints
 *     "*** PASSED ***" for 0, "*** FAILED *** (code = K)" otherwise; qemu exits with it).
 * The target writes tohost only when it reads 0 (the host clears it once it has taken the
 * command) and clears any fromhost response on the way (qemu answers every putchar there,
 * fesvr does not) -- the same handshake as riscv-pk's machine/htif.c. The device-1 console is
 * used rather than the syscall proxy's write because qemu 7.2 implements only the former. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

volatile uint64_t tohost __attribute__((section(".htif"), aligned(64), used));
volatile uint64_t fromhost __attribute__((section(".htif"), aligned(64), used));

#define HTIF_TOHOST(dev, cmd, payload) (((uint64_t)(dev) << 56) | ((uint64_t)(cmd) << 48) | (uint64_t)(payload))

static void htif_send(uint64_t word) {
  while (tohost) {
    if (fromhost) fromhost = 0;
  }
  if (fromhost) fromhost = 0;
  tohost = word;
}

static int htif_putc(char c, FILE* f) {
  (void)f;
  htif_send(HTIF_TOHOST(1, 1, (uint8_t)c));
  return (uint8_t)c;
}

static FILE htif_console = FDEV_SETUP_STREAM(htif_putc, NULL, NULL, _FDEV_SETUP_WRITE);
FILE* const stdin = &htif_console;
FILE* const stdout = &htif_console;
FILE* const stderr = &htif_console;

void _exit(int code) {
  htif_send(HTIF_TOHOST(0, 0, ((uint64_t)(uint32_t)code << 1) | 1));
  for (;;) {
  }
}

/* Ours rather than picolibc's: its exit() reaches atexit and fini through weak references,
 * which resolve to address 0 when unused -- out of reach of PC-relative code at 0x80000000.
 * The harness registers no atexit handler and stdout is unbuffered, so there is nothing to run. */
void exit(int code) { _exit(code); }

static volatile int in_trap;

void accel_trap(uint64_t mcause, uint64_t mepc, uint64_t mtval) {
  if (!in_trap) {        /* a trap while reporting a trap: leave without printing */
    in_trap = 1;
    printf("[err] trap mcause=%llu mepc=0x%llx mtval=0x%llx\n", (unsigned long long)mcause,
           (unsigned long long)mepc, (unsigned long long)mtval);
  }
  _exit(4);
}
