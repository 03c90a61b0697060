// The entry point of troupe_cluster_node_tests: CAF's test engine (its deterministic test
// coordinator, caf/test/dsl.hpp, needs it). Options: -s SUITE -t TEST (regular expressions).
#define CAF_SUITE node_control
#define CAF_TEST_UNIT_TEST_IMPL
#include <caf/test/unit_test_impl.hpp>
