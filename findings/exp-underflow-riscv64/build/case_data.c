#include "abi.h"

extern const accel_library_header_t** exp_f32_dispatch_0_library_query(uint32_t, const accel_env_t*);
extern const accel_library_header_t** exp_f32_dispatch_0_library_query(uint32_t, const accel_env_t*);
const accel_library_query_fn ACCEL_QUERIES[] = {exp_f32_dispatch_0_library_query, exp_f32_dispatch_0_library_query};
const uint32_t ACCEL_QUERY_COUNT = 2;
extern const uint8_t accel_input_0[];
const accel_buffer_t ACCEL_BUFFERS[] = {
  {36u, accel_input_0, 36u},
  {36u, 0, 0},
};
const uint32_t ACCEL_BUFFER_COUNT = 2;
static const accel_binding_t B0[] = {{0u, 0u, 36u}, {1u, 0u, 36u}};
static const uint32_t K0[] = {0};
const accel_dispatch_t ACCEL_DISPATCHES[] = {
  {"exp_f32_dispatch_0_elementwise_9_f32", 0, {1u, 1u, 1u}, 0u, K0, 2u, B0},
};
const uint32_t ACCEL_DISPATCH_COUNT = 1;
const accel_output_t ACCEL_OUTPUTS[] = {
  {"y", "f32", "9", 1u, 0u, 36u},
};
const uint32_t ACCEL_OUTPUT_COUNT = 1;
const uint32_t ACCEL_ITERATIONS = 1;
