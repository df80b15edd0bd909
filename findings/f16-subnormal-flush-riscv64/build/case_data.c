#include "abi.h"

extern const accel_library_header_t** rowexpandmul_fillpad_dispatch_0_library_query(uint32_t, const accel_env_t*);
extern const accel_library_header_t** rowexpandmul_fillpad_dispatch_0_library_query(uint32_t, const accel_env_t*);
const accel_library_query_fn ACCEL_QUERIES[] = {rowexpandmul_fillpad_dispatch_0_library_query, rowexpandmul_fillpad_dispatch_0_library_query};
const uint32_t ACCEL_QUERY_COUNT = 2;
extern const uint8_t accel_input_0[];
extern const uint8_t accel_input_1[];
extern const uint8_t accel_input_2[];
extern const uint8_t accel_input_3[];
extern const uint8_t accel_input_4[];
const accel_buffer_t ACCEL_BUFFERS[] = {
  {4u, accel_input_0, 4u},
  {4u, accel_input_1, 4u},
  {4u, accel_input_2, 4u},
  {4u, accel_input_3, 4u},
  {4u, accel_input_4, 4u},
  {4u, 0, 0},
};
const uint32_t ACCEL_BUFFER_COUNT = 6;
static const accel_binding_t B0[] = {{0u, 0u, 4u}, {1u, 0u, 4u}, {2u, 0u, 4u}, {3u, 0u, 4u}, {4u, 0u, 4u}, {5u, 0u, 4u}};
static const uint32_t K0[] = {0};
const accel_dispatch_t ACCEL_DISPATCHES[] = {
  {"rowexpandmul_fillpad_dispatch_0_elementwise", 0, {1u, 1u, 1u}, 0u, K0, 6u, B0},
};
const uint32_t ACCEL_DISPATCH_COUNT = 1;
const accel_output_t ACCEL_OUTPUTS[] = {
  {"out", "f32", "1x1", 5u, 0u, 4u},
};
const uint32_t ACCEL_OUTPUT_COUNT = 1;
const uint32_t ACCEL_ITERATIONS = 1;
