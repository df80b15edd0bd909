/* Runs a compiled IREE program without the IREE runtime: calls every workgroup of every
 * dispatch of the static executable library in the order the host program records them, on
 * buffers laid out as the host program binds them (tables generated per case by build.py into
 * case_data.c), and prints what it does.
 *
 * stdout protocol (read by hardware/backends/qemu_rvv/protocol.py and the FireSim backend):
 *   Bench iter <i>/<n>                      when iteration i (1-based) begins
 *   [dn] d=<dispatch> wg=<workgroups>       before each dispatch
 *   [dc] d=<dispatch> cyc=<cycles or 0>     after it
 *   [out] name=<n> dtype=<t> shape=<d0>x<d1>... hex=<little-endian bytes, lowercase hex>
 *   [done]
 * Without ACCEL_UART_OUTPUTS the [out] lines are replaced by one file per output,
 * <argv[1]>/<name>.bin (raw little-endian bytes). With ACCEL_INPUTS_FROM_FILE the inputs are not
 * in the tables but read, in buffer order, from the file named by the last argument, so one
 * executable serves every case of a program. Errors: "[err] <what>" and exit code 2
 * (setup) or 3 (a dispatch returned non-zero). stdout is flushed after every line so a hang
 * leaves the last [dn] visible. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"

#ifndef ACCEL_UART_OUTPUTS
#include <errno.h>
#endif

static uint64_t cycles(void) {
#if defined(ACCEL_RDCYCLE) && defined(__riscv)
  uint64_t c;
  __asm__ volatile("rdcycle %0" : "=r"(c));
  return c;
#else
  return 0;
#endif
}

static void fail(int code, const char* what, const char* detail) {
  printf("[err] %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  fflush(stdout);
  exit(code);
}

static void* alloc64(uint64_t size) {
  void* p = NULL;
  uint64_t n = size ? (size + 63) / 64 * 64 : 64;
  if (posix_memalign(&p, 64, n) != 0 || !p) fail(2, "out of memory", NULL);
  memset(p, 0, n);
  return p;
}

static const accel_library_t* load_library(uint32_t i, const accel_env_t* env) {
  const accel_library_header_t** header = ACCEL_QUERIES[i](ACCEL_IREE_LIBRARY_VERSION, env);
  if (!header || !*header) fail(2, "library query refused ABI version", "6");
  if ((*header)->version != ACCEL_IREE_LIBRARY_VERSION) fail(2, "library has another ABI version", (*header)->name);
  const accel_library_t* lib = (const accel_library_t*)header;
  if (lib->imports.count != 0) fail(2, "library imports functions; the harness provides none", lib->imports.symbols[0]);
  if (lib->constants.count != 0) fail(2, "library needs executable constants", (*header)->name);
  return lib;
}

static int find_export(const accel_library_t* lib, const char* name) {
  if (!lib->exports.names) return -1;
  for (uint32_t i = 0; i < lib->exports.count; ++i)
    if (lib->exports.names[i] && strcmp(lib->exports.names[i], name) == 0) return (int)i;
  return -1;
}

int main(int argc, char** argv) {
  static accel_env_t env; /* no constants, no imports, processor data all zero */
  const accel_library_t* libs[8];
  if (ACCEL_QUERY_COUNT > 8) fail(2, "too many libraries", NULL);
  for (uint32_t i = 0; i < ACCEL_QUERY_COUNT; ++i) libs[i] = load_library(i, &env);

  uint8_t** buffers = calloc(ACCEL_BUFFER_COUNT ? ACCEL_BUFFER_COUNT : 1, sizeof(uint8_t*));
#ifdef ACCEL_INPUTS_FROM_FILE
  const char* inputs = argc > 1 ? argv[argc - 1] : "(no inputs file given)";
  FILE* in = argc > 1 ? fopen(inputs, "rb") : NULL;
  if (!in) fail(2, "cannot open the inputs file", inputs);
#endif
  for (uint32_t b = 0; b < ACCEL_BUFFER_COUNT; ++b) {
    buffers[b] = alloc64(ACCEL_BUFFERS[b].size);
    if (ACCEL_BUFFERS[b].init) memcpy(buffers[b], ACCEL_BUFFERS[b].init, ACCEL_BUFFERS[b].init_size);
#ifdef ACCEL_INPUTS_FROM_FILE
    else if (ACCEL_BUFFERS[b].init_size &&
             fread(buffers[b], 1, ACCEL_BUFFERS[b].init_size, in) != ACCEL_BUFFERS[b].init_size)
      fail(2, "the inputs file is shorter than the inputs", inputs);
#endif
  }
#ifdef ACCEL_INPUTS_FROM_FILE
  fclose(in);
#endif

  for (uint32_t it = 1; it <= ACCEL_ITERATIONS; ++it) {
    printf("Bench iter %u/%u\n", it, ACCEL_ITERATIONS);
    fflush(stdout);
    for (uint32_t d = 0; d < ACCEL_DISPATCH_COUNT; ++d) {
      const accel_dispatch_t* dd = &ACCEL_DISPATCHES[d];
      const accel_library_t* lib = libs[dd->library];
      int ordinal = find_export(lib, dd->export_name);
      if (ordinal < 0) fail(2, "export not found in library", dd->export_name);
      const accel_dispatch_attrs_t* attrs = lib->exports.attrs ? &lib->exports.attrs[ordinal] : NULL;
      void* ptrs[64];
      size_t lengths[64];
      if (dd->binding_count > 64) fail(2, "too many bindings", dd->export_name);
      for (uint32_t k = 0; k < dd->binding_count; ++k) {
        ptrs[k] = buffers[dd->bindings[k].buffer] + dd->bindings[k].offset;
        lengths[k] = (size_t)dd->bindings[k].length;
      }
      accel_dispatch_state_t state;
      memset(&state, 0, sizeof(state));
      state.workgroup_size_x = attrs && attrs->workgroup_size_x ? attrs->workgroup_size_x : 1;
      state.workgroup_size_y = attrs && attrs->workgroup_size_y ? attrs->workgroup_size_y : 1;
      state.workgroup_size_z = attrs && attrs->workgroup_size_z ? attrs->workgroup_size_z : 1;
      state.constant_count = (uint16_t)dd->constant_count;
      state.workgroup_count_x = dd->wg[0];
      state.workgroup_count_y = dd->wg[1];
      state.workgroup_count_z = (uint16_t)dd->wg[2];
      state.max_concurrency = 1;
      state.binding_count = (uint8_t)dd->binding_count;
      state.constants = dd->constants;
      state.binding_ptrs = ptrs;
      state.binding_lengths = lengths;
      uint32_t local_size = attrs ? (uint32_t)attrs->local_memory_pages * ACCEL_LOCAL_MEMORY_PAGE_SIZE : 0;
      void* local = local_size ? alloc64(local_size) : NULL;
      uint64_t total = (uint64_t)dd->wg[0] * dd->wg[1] * dd->wg[2];
      printf("[dn] d=%u wg=%llu\n", d, (unsigned long long)total);
      fflush(stdout);
      uint64_t start = cycles();
      for (uint32_t z = 0; z < dd->wg[2]; ++z)
        for (uint32_t y = 0; y < dd->wg[1]; ++y)
          for (uint32_t x = 0; x < dd->wg[0]; ++x) {
            accel_workgroup_state_t wg = {x, y, (uint16_t)z, 0, 0, local, local_size};
            int rc = lib->exports.ptrs[ordinal](&env, &state, &wg);
            if (rc != 0) {
              printf("[err] dispatch d=%u wg=(%u,%u,%u) returned %d\n", d, x, y, z, rc);
              fflush(stdout);
              exit(3);
            }
          }
      uint64_t spent = cycles() - start;
      printf("[dc] d=%u cyc=%llu\n", d, (unsigned long long)spent);
      fflush(stdout);
      free(local);
    }
  }

  for (uint32_t o = 0; o < ACCEL_OUTPUT_COUNT; ++o) {
    const accel_output_t* out = &ACCEL_OUTPUTS[o];
    const uint8_t* data = buffers[out->buffer] + out->offset;
#ifdef ACCEL_UART_OUTPUTS
    printf("[out] name=%s dtype=%s shape=%s hex=", out->name, out->dtype, out->shape);
    static const char digits[] = "0123456789abcdef";
    char chunk[129];
    uint64_t i = 0;
    while (i < out->length) {
      int n = 0;
      for (; n < 64 && i < out->length; ++n, ++i) {
        chunk[2 * n] = digits[data[i] >> 4];
        chunk[2 * n + 1] = digits[data[i] & 15];
      }
      chunk[2 * n] = 0;
      fputs(chunk, stdout);
    }
    fputc('\n', stdout);
    fflush(stdout);
#else
    if (argc < 2) fail(2, "usage: harness OUTPUT_DIR", NULL);
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.bin", argv[1], out->name);
    FILE* f = fopen(path, "wb");
    if (!f || fwrite(data, 1, out->length, f) != out->length || fclose(f) != 0) fail(2, "cannot write", path);
#endif
  }
  printf("[done]\n");
  fflush(stdout);
  (void)argc;
  (void)argv;
  return 0;
}
