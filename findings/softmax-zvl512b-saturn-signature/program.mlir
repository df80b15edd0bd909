func.func @main(%x: tensor<16x64xf32>) -> (tensor<16x64xf32>) {
  %empty = tensor.empty() : tensor<16x64xf32>
  %y = linalg.softmax dimension(1) ins(%x : tensor<16x64xf32>) outs(%empty : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
