func.func @matmul(%lhs: tensor<64x64xbf16>, %rhs: tensor<64x64xbf16>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<64x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<64x64xf32>) -> tensor<64x64xf32>
  %c = linalg.matmul ins(%lhs, %rhs : tensor<64x64xbf16>, tensor<64x64xbf16>) outs(%acc : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}
