#include "abi.h"

extern const accel_library_header_t** to_f16_dispatch_0_library_query(uint32_t, const accel_env_t*);
extern const accel_library_header_t** to_f16_dispatch_0_library_query(uint32_t, const accel_env_t*);
const accel_library_query_fn ACCEL_QUERIES[] = {to_f16_dispatch_0_library_query, to_f16_dispatch_0_library_query};
const uint32_t ACCEL_QUERY_COUNT = 2;
extern const uint8_t accel_input_0[];
const accel_buffer_t ACCEL_BUFFERS[] = {
  {24u, accel_input_0, 24u},
  {24u, 0, 0},
};
const uint32_t ACCEL_BUFFER_COUNT = 2;
static const accel_binding_t B0[] = {{0u, 0u, 24u}, {1u, 0u, 24u}};
static const uint32_t K0[] = {0};
const accel_dispatch_t ACCEL_DISPATCHES[] = {
  {"to_f16_dispatch_0_elementwise_6_f32", 0, {1u, 1u, 1u}, 0u, K0, 2u, B0},
};
const uint32_t ACCEL_DISPATCH_COUNT = 1;
const accel_output_t ACCEL_OUTPUTS[] = {
  {"y", "f32", "6", 1u, 0u, 24u},
};
const uint32_t ACCEL_OUTPUT_COUNT = 1;
const uint32_t ACCEL_ITERATIONS = 1;
