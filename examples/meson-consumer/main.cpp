// A program that uses an installed onnxmap: opens a model, prints its metadata and reads one
// tensor (the one named on the command line, else the first).
//
//   consumer MODEL.onnx [TENSOR]

#include <onnxmap/onnxmap.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.onnx [TENSOR]\n", argv[0]);
    return 2;
  }
  try {
    const onnxmap::Model model = onnxmap::Model::open(argv[1]);
    std::printf("onnxmap %s\n", std::string(onnxmap::version()).c_str());
    std::printf("ir_version %lld\n", static_cast<long long>(model.ir_version()));
    std::printf("producer %s\n", std::string(model.producer_name()).c_str());
    for (const onnxmap::OperatorSetId& opset : model.opset_imports()) {
      std::printf("opset '%s' %lld\n", std::string(opset.domain).c_str(),
                  static_cast<long long>(opset.version));
    }
    std::printf("tensors %zu\n", model.tensor_count());
    if (model.tensor_count() == 0) return 0;

    const onnxmap::Tensor tensor = argc > 2 ? model.tensor(argv[2]) : model.tensor_at(0);
    std::printf("tensor %s %s", std::string(tensor.name()).c_str(),
                onnxmap::to_string(tensor.data_type()).c_str());
    for (const std::int64_t dim : tensor.dims()) std::printf(" %lld", static_cast<long long>(dim));
    // The bytes in the raw_data layout: a view into the mapped file, or decoded typed fields.
    const onnxmap::TensorData data = tensor.data();
    std::uint64_t sum = 0;
    for (const std::byte b : data.bytes()) sum += std::to_integer<std::uint64_t>(b);
    std::printf("\nbytes %zu sum %llu\n", data.bytes().size(),
                static_cast<unsigned long long>(sum));
  } catch (const onnxmap::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected: %s\n", e.what());
    return 1;
  }
  return 0;
}
