// Device names: what parses, what is refused with the text named, and a device this machine
// does not have is refused naming it and what there is.
#include <catch2/catch.hpp>

#include <troupe/kernels/compute_device.hpp>

using namespace troupe;

TEST_CASE("cpu, gpu:N and cuda:N parse, and print back") {
  CHECK(parse_compute_device("cpu") == compute_device{});
  CHECK(parse_compute_device("gpu:0") == compute_device{device_kind::cuda, 0});
  CHECK(parse_compute_device("cuda:3") == compute_device{device_kind::cuda, 3});
  CHECK(to_string(parse_compute_device("cuda:3")) == "gpu:3");
  const auto list = parse_compute_devices("gpu:0,gpu:1,gpu:0");
  REQUIRE(list.size() == 3);
  CHECK(list[1] == compute_device{device_kind::cuda, 1});
  CHECK(list[2] == list[0]);
}

TEST_CASE("malformed device names are refused naming the text") {
  for (const char* bad :
       {"", "gpu", "gpu:", "gpu:-1", "gpu:x", "GPU:0", "gpu0", "tpu:0", "gpu:99999"})
    CHECK_THROWS_WITH(parse_compute_device(bad),
                      Catch::Contains(std::string("device '") + bad + "'"));
  CHECK_THROWS_WITH(parse_compute_devices("gpu:0,,gpu:1"), Catch::Contains("item 2"));
  CHECK_THROWS_WITH(parse_compute_devices("gpu:0,gpu:one"),
                    Catch::Contains("item 2") && Catch::Contains("gpu:one"));
}

TEST_CASE("a GPU the machine does not have is refused naming it and what there is") {
  const std::vector<compute_device> wanted{compute_device{}, compute_device{device_kind::cuda, 1}};
  device_report none;
  none.cuda_compiled = true;
  none.why_no_gpu = "CUDA: no CUDA-capable device is detected";
  CHECK_THROWS_WITH(require_devices(wanted, none), Catch::Contains("gpu:1 is not available")
                                                     && Catch::Contains("no CUDA-capable device"));
  device_report one = none;
  one.gpus.push_back(gpu_device{0, "NVIDIA H100", 80ull << 30, 9, 0});
  CHECK_THROWS_WITH(require_devices(wanted, one),
                    Catch::Contains("gpu:1 is not available")
                      && Catch::Contains("1 GPU(s): gpu:0 (NVIDIA H100)"));
  CHECK_NOTHROW(require_devices({compute_device{}, compute_device{device_kind::cuda, 0}}, one));
  device_report cpu_build;
  CHECK_THROWS_WITH(require_devices(wanted, cpu_build), Catch::Contains("built without CUDA"));
  CHECK_NOTHROW(require_devices({compute_device{}}, cpu_build)); // the CPU is always there
}

TEST_CASE("the choice of cuDNN convolution algorithms is read, kept and refused by name",
          "[kernels]") {
  CHECK(parse_convolution_algorithms("exact") == convolution_algorithms::exact);
  CHECK(parse_convolution_algorithms("fastest") == convolution_algorithms::fastest);
  CHECK_THROWS_WITH(parse_convolution_algorithms("fast"), "'fast' is not one of exact, fastest");
  CHECK_THROWS_AS(parse_convolution_algorithms(""), std::invalid_argument);
  REQUIRE(current_convolution_algorithms() == convolution_algorithms::exact); // the default
  set_convolution_algorithms(convolution_algorithms::fastest);
  CHECK(current_convolution_algorithms() == convolution_algorithms::fastest);
  set_convolution_algorithms(convolution_algorithms::exact);
  CHECK(current_convolution_algorithms() == convolution_algorithms::exact);
}
