/* The few structures of IREE's executable library ABI that the harness needs.
 *
 * Written from the public header runtime/src/iree/hal/local/executable_library.h (ABI version
 * 6, IREE_HAL_EXECUTABLE_LIBRARY_VERSION_0_6), matching iree-base-compiler 3.13.0
 * (89ece87b); the field types agree with the LLVM struct types the compiler emits into
 * every library (the selftest tests/selftest/test_qemu_abi.py compares them). The header itself
 * is not shipped in the Python wheels. Only what the harness reads or fills is named; the rest
 * is kept as opaque fields of the same size so that offsets stay right. */
#ifndef ACCEL_ABI_H_
#define ACCEL_ABI_H_

#include <stddef.h>
#include <stdint.h>

#define ACCEL_IREE_LIBRARY_VERSION 6u

typedef struct accel_env_t accel_env_t;

typedef struct {
  uint32_t version;
  const char* name;
  uint32_t features;
  int32_t sanitizer;
} accel_library_header_t;

typedef const accel_library_header_t** (*accel_library_query_fn)(uint32_t max_version, const accel_env_t* env);

struct accel_env_t {
  const uint32_t* constants;
  void* import_thunk;
  const void* const* import_funcs;
  const void** import_contexts;
  uint64_t processor_data[8];
};

typedef struct {
  uint32_t workgroup_size_x;
  uint32_t workgroup_size_y;
  uint16_t workgroup_size_z;
  uint16_t constant_count;
  uint32_t workgroup_count_x;
  uint32_t workgroup_count_y;
  uint16_t workgroup_count_z;
  uint8_t max_concurrency;
  uint8_t binding_count;
  const uint32_t* constants;
  void* const* binding_ptrs;
  const size_t* binding_lengths;
} accel_dispatch_state_t;

typedef struct {
  uint32_t workgroup_id_x;
  uint32_t workgroup_id_y;
  uint16_t workgroup_id_z;
  uint16_t reserved;
  uint32_t processor_id;
  void* local_memory;
  uint32_t local_memory_size;
} accel_workgroup_state_t;

typedef int (*accel_dispatch_fn)(const accel_env_t* env, const accel_dispatch_state_t* dispatch,
                                 const accel_workgroup_state_t* workgroup);

typedef struct {
  uint64_t flags;
  uint16_t local_memory_pages;
  uint8_t constant_count;
  uint8_t binding_count;
  uint32_t workgroup_size_x;
  uint32_t workgroup_size_y;
  uint16_t workgroup_size_z;
  uint16_t parameter_count;
  uint64_t reserved_1[5];
} accel_dispatch_attrs_t;

typedef struct {
  uint32_t count;
  const accel_dispatch_fn* ptrs;
  const accel_dispatch_attrs_t* attrs;
  const void* const* params;
  const void* occupancy;
  const char* const* names;
  const char* const* tags;
  const char* const* parameter_names;
  const void* source_locations;
  const void* stage_locations;
} accel_export_table_t;

typedef struct {
  const accel_library_header_t* header;
  struct { uint32_t count; const char* const* symbols; } imports;
  accel_export_table_t exports;
  struct { uint32_t count; } constants;
  struct { uint32_t count; const void* files; } sources;
} accel_library_t;

#define ACCEL_LOCAL_MEMORY_PAGE_SIZE 4096

_Static_assert(sizeof(accel_dispatch_state_t) == 48, "dispatch state layout (64-bit)");
_Static_assert(sizeof(accel_workgroup_state_t) == 32, "workgroup state layout (64-bit)");
_Static_assert(sizeof(accel_dispatch_attrs_t) == 64, "dispatch attrs layout");
_Static_assert(sizeof(accel_env_t) == 96, "environment layout (64-bit)");

/* What build.py generates for a case (case_data.c; with ACCEL_CASE_FROM_FILE only the queries are
 * linked in, the rest is read from the case file: harness.c, read_case). */
typedef struct { uint32_t buffer; uint64_t offset; uint64_t length; } accel_binding_t;
typedef struct {
  const char* export_name;
  uint32_t library;
  uint32_t wg[3];
  uint32_t constant_count;
  const uint32_t* constants;
  uint32_t binding_count;
  const accel_binding_t* bindings;
} accel_dispatch_t;
typedef struct { uint64_t size; const uint8_t* init; uint64_t init_size; } accel_buffer_t;
typedef struct {
  const char* name; const char* dtype; const char* shape;
  uint32_t buffer; uint64_t offset; uint64_t length;
} accel_output_t;

extern const accel_library_query_fn ACCEL_QUERIES[];
extern const uint32_t ACCEL_QUERY_COUNT;
extern const accel_buffer_t ACCEL_BUFFERS[];
extern const uint32_t ACCEL_BUFFER_COUNT;
extern const accel_dispatch_t ACCEL_DISPATCHES[];
extern const uint32_t ACCEL_DISPATCH_COUNT;
extern const accel_output_t ACCEL_OUTPUTS[];
extern const uint32_t ACCEL_OUTPUT_COUNT;
extern const uint32_t ACCEL_ITERATIONS;

#endif
