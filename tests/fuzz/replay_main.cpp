// Runs a fuzz target's LLVMFuzzerTestOneInput once over each file of the folders it is given, in
// name order, the way libFuzzer runs a crashing input: the unit-test builds (GCC, no libFuzzer)
// replay the inputs kept in tests/fuzz/regressions/TARGET/ with it. A finding that came back
// crashes, trips a sanitizer or traps here as it did in the fuzzer. Exits 2 when a folder is
// missing or holds no input.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(argv[i], ec)) {
      if (entry.is_regular_file() && entry.path().extension() != ".md") {
        inputs.push_back(entry.path());
      }
    }
    if (ec) {
      std::cerr << argv[i] << ": " << ec.message() << '\n';
      return 2;
    }
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::cerr << "no kept inputs to replay\n";
    return 2;
  }
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    std::cout << "replaying " << path.filename().string() << " (" << bytes.size() << " bytes)\n";
    (void)LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::cout << inputs.size() << " inputs replayed\n";
  return 0;
}
