/* Runs a compiled IREE program without the IREE runtime: calls every workgroup of every
 * dispatch of the static executable library in the order the host program records them, on
 * buffers laid out as the host program binds them (tables generated per case by build.py into
 * case_data.c, or read from a case file), and prints what it does.
 *
 * stdout protocol (read by hardware/backends/qemu_rvv/protocol.py and the FireSim backend):
 *   Bench iter <i>/<n>                      when iteration i (1-based) begins
 *   [dn] d=<dispatch> wg=<workgroups>       before each dispatch
 *   [dc] d=<dispatch> cyc=<cycles or 0>     after it
 *   [out] name=<n> dtype=<t> shape=<d0>x<d1>... hex=<little-endian bytes, lowercase hex>
 *   [done]
 * Without ACCEL_UART_OUTPUTS the [out] lines are replaced by one file per output,
 * <argv[1]>/<name>.bin (raw little-endian bytes). With ACCEL_CASE_FROM_FILE nothing of the case
 * is linked in: its tables and inputs are read from the case file named by the last argument
 * (read_case below; written by build.write_case), so one executable serves every program of a
 * static library and every case of each. Errors: "[err] <what>" and exit code 2
 * (setup) or 3 (a dispatch returned non-zero). stdout is flushed after every line so a hang
 * leaves the last [dn] visible. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"

#include <errno.h>

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
  if (size > UINT64_MAX - 63) fail(2, "out of memory", NULL); /* rounding it up would wrap */
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

/* What one run does: the tables of case_data.c, or of the case file. */
typedef struct {
  const accel_buffer_t* buffers;
  uint32_t buffer_count;
  const accel_dispatch_t* dispatches;
  uint32_t dispatch_count;
  const accel_output_t* outputs;
  uint32_t output_count;
  uint32_t iterations;
} accel_case_t;

#ifdef ACCEL_CASE_FROM_FILE
/* The case file: whitespace-separated words, then the inputs' bytes.
 *   accel-case 1
 *   iterations <n>
 *   buffers <count>     then per buffer:   <size> <bytes of it in the file (0: zeros)>
 *   dispatches <count>  then per dispatch: <export> <library> <wg x> <wg y> <wg z>
 *                                          <constant count> <constant>... <binding count> (<buffer> <offset> <length>)...
 *   outputs <count>     then per output:   <name> <dtype> <shape> <buffer> <offset> <length>
 *   end
 * One newline after "end", then each buffer's bytes in buffer order. */
static FILE* case_file;
static const char* case_path;

static void bad_case(const char* what) {
  char msg[256];
  snprintf(msg, sizeof(msg), "the case file is malformed (%s)", what);
  fail(2, msg, case_path);
}

static char* word(const char* what) {
  char w[1024];
  if (fscanf(case_file, "%1023s", w) != 1) bad_case(what);
  char* out = strdup(w);
  if (!out) fail(2, "out of memory", NULL);
  return out;
}

static void keyword(const char* want) {
  char* got = word(want);
  if (strcmp(got, want) != 0) bad_case(want);
  free(got);
}

static uint64_t number(const char* what) {
  unsigned long long v;
  char sign[2];
  /* %llu takes "-1" as 2^64-1: a sign is malformed, as is a number past 2^64-1 (ERANGE). */
  if (fscanf(case_file, " %1[-+]", sign) == 1) bad_case(what);
  errno = 0;
  if (fscanf(case_file, "%llu", &v) != 1 || errno == ERANGE) bad_case(what);
  return (uint64_t)v;
}

/* A number that must fit its field (a count of 32 bits, a workgroup count z of 16). */
static uint64_t bounded(const char* what, uint64_t max) {
  uint64_t v = number(what);
  if (v > max) {
    char msg[128];
    snprintf(msg, sizeof(msg), "%s %llu past %llu", what, (unsigned long long)v, (unsigned long long)max);
    bad_case(msg);
  }
  return v;
}

/* A range of a buffer (a binding, an output): it must lie inside it (no offset past its end, no
 * length that wraps): else a dispatch writes, or an output prints, memory that is not the buffer's. */
static void inside(const char* of, uint64_t offset, uint64_t length, uint64_t size) {
  if (offset > size || length > size - offset) {
    char msg[128];
    snprintf(msg, sizeof(msg), "%s past the end of its buffer (offset %llu, length %llu, buffer %llu bytes)", of,
             (unsigned long long)offset, (unsigned long long)length, (unsigned long long)size);
    bad_case(msg);
  }
}

/* A buffer's bytes: no more than a riscv64 user address space (Sv48: 2^47) can hold. */
#define ACCEL_MAX_BUFFER ((uint64_t)1 << 47)

/* The buffer a binding or an output names ("binding", "output"), checked against the buffers. */
static uint32_t buffer_index(const char* of, uint32_t buffer_count) {
  char what[64];
  snprintf(what, sizeof(what), "%s buffer", of);
  uint64_t b = number(what);
  if (b >= buffer_count) {
    snprintf(what, sizeof(what), "%s of a buffer that does not exist", of);
    bad_case(what);
  }
  return (uint32_t)b;
}

static void* table(uint64_t count, size_t size) {
  void* p = calloc(count ? count : 1, size);
  if (!p) fail(2, "out of memory", NULL);
  return p;
}

static accel_case_t read_case(void) {
  accel_case_t c;
  keyword("accel-case");
  if (number("version") != 1) bad_case("version");
  keyword("iterations");
  c.iterations = (uint32_t)bounded("iterations", UINT32_MAX);
  keyword("buffers");
  c.buffer_count = (uint32_t)bounded("buffer count", UINT32_MAX);
  accel_buffer_t* buffers = table(c.buffer_count, sizeof(*buffers));
  for (uint32_t b = 0; b < c.buffer_count; ++b) {
    buffers[b].size = bounded("buffer size", ACCEL_MAX_BUFFER);
    buffers[b].init_size = number("buffer input size");
    if (buffers[b].init_size > buffers[b].size) bad_case("input larger than its buffer");
  }
  keyword("dispatches");
  c.dispatch_count = (uint32_t)bounded("dispatch count", UINT32_MAX);
  accel_dispatch_t* dispatches = table(c.dispatch_count, sizeof(*dispatches));
  for (uint32_t d = 0; d < c.dispatch_count; ++d) {
    accel_dispatch_t* dd = &dispatches[d];
    dd->export_name = word("export name");
    dd->library = (uint32_t)bounded("library", UINT32_MAX);
    /* The dispatch state's fields: x and y of 32 bits, z of 16 (abi.h). */
    for (int k = 0; k < 3; ++k) dd->wg[k] = (uint32_t)bounded("workgroup count", k < 2 ? UINT32_MAX : UINT16_MAX);
    dd->constant_count = (uint32_t)bounded("constant count", UINT16_MAX);
    uint32_t* constants = table(dd->constant_count, sizeof(uint32_t));
    for (uint32_t k = 0; k < dd->constant_count; ++k) constants[k] = (uint32_t)bounded("constant", UINT32_MAX);
    dd->constants = constants;
    dd->binding_count = (uint32_t)bounded("binding count", 64);
    accel_binding_t* bindings = table(dd->binding_count, sizeof(*bindings));
    for (uint32_t k = 0; k < dd->binding_count; ++k) {
      bindings[k].buffer = buffer_index("binding", c.buffer_count);
      bindings[k].offset = number("binding offset");
      bindings[k].length = number("binding length");
      inside("binding", bindings[k].offset, bindings[k].length, buffers[bindings[k].buffer].size);
    }
    dd->bindings = bindings;
  }
  keyword("outputs");
  c.output_count = (uint32_t)bounded("output count", UINT32_MAX);
  accel_output_t* outputs = table(c.output_count, sizeof(*outputs));
  for (uint32_t o = 0; o < c.output_count; ++o) {
    outputs[o].name = word("output name");
    outputs[o].dtype = word("output dtype");
    outputs[o].shape = word("output shape");
    if (strcmp(outputs[o].shape, "-") == 0) outputs[o].shape = ""; /* a scalar */
    outputs[o].buffer = buffer_index("output", c.buffer_count);
    outputs[o].offset = number("output offset");
    outputs[o].length = number("output length");
    inside("output", outputs[o].offset, outputs[o].length, buffers[outputs[o].buffer].size);
  }
  keyword("end");
  if (fgetc(case_file) != '\n') bad_case("no newline after end");
  c.buffers = buffers;
  c.dispatches = dispatches;
  c.outputs = outputs;
  return c;
}
#endif

int main(int argc, char** argv) {
  static accel_env_t env; /* no constants, no imports, processor data all zero */
  const accel_library_t* libs[8];
  if (ACCEL_QUERY_COUNT > 8) fail(2, "too many libraries", NULL);
  for (uint32_t i = 0; i < ACCEL_QUERY_COUNT; ++i) libs[i] = load_library(i, &env);

#ifdef ACCEL_CASE_FROM_FILE
  case_path = argc > 1 ? argv[argc - 1] : "(no case file given)";
  case_file = argc > 1 ? fopen(case_path, "rb") : NULL;
  if (!case_file) fail(2, "cannot open the case file", case_path);
  const accel_case_t c = read_case();
#else
  const accel_case_t c = {ACCEL_BUFFERS, ACCEL_BUFFER_COUNT, ACCEL_DISPATCHES, ACCEL_DISPATCH_COUNT,
                          ACCEL_OUTPUTS, ACCEL_OUTPUT_COUNT, ACCEL_ITERATIONS};
#endif
  uint8_t** buffers = calloc(c.buffer_count ? c.buffer_count : 1, sizeof(uint8_t*));
  for (uint32_t b = 0; b < c.buffer_count; ++b) {
    buffers[b] = alloc64(c.buffers[b].size);
    if (c.buffers[b].init) memcpy(buffers[b], c.buffers[b].init, c.buffers[b].init_size);
#ifdef ACCEL_CASE_FROM_FILE
    else if (c.buffers[b].init_size &&
             fread(buffers[b], 1, c.buffers[b].init_size, case_file) != c.buffers[b].init_size)
      fail(2, "the case file is shorter than the inputs", case_path);
#endif
  }
#ifdef ACCEL_CASE_FROM_FILE
  fclose(case_file);
#endif

  for (uint32_t it = 1; it <= c.iterations; ++it) {
    printf("Bench iter %u/%u\n", it, c.iterations);
    fflush(stdout);
    for (uint32_t d = 0; d < c.dispatch_count; ++d) {
      const accel_dispatch_t* dd = &c.dispatches[d];
      if (dd->library >= ACCEL_QUERY_COUNT) fail(2, "dispatch of a library that does not exist", dd->export_name);
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

  for (uint32_t o = 0; o < c.output_count; ++o) {
    const accel_output_t* out = &c.outputs[o];
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
