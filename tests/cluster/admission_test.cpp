// Admission proofs: the proof a peer owes verifies with the same secret and fails with another
// secret, with the other direction (a reflected proof), and when any part of either hello
// differs; secret files are refused when missing, short or readable by others, and no error
// text repeats the secret.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include <troupe/cluster/admission.hpp>

using namespace troupe;

namespace {

hello_message hello_of(node_kind role, std::uint64_t plan_hash) {
  hello_message h;
  h.role = role;
  h.name = to_string(role);
  h.challenge = fresh_nonce();
  h.plan_hash = plan_hash;
  return h;
}

std::string write_secret_file(const std::string& contents, mode_t mode) {
  const std::string path = "admission_test_secret_" + std::to_string(mode);
  std::ofstream(path, std::ios::binary) << contents;
  REQUIRE(::chmod(path.c_str(), mode) == 0);
  return path;
}

std::string thrown_text(const std::string& path) {
  try {
    cluster_secret::from_file(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  FAIL("no error for " << path);
  return {};
}

} // namespace

TEST_CASE("a proof verifies only for the same secret, direction and hellos",
          "[cluster][admission]") {
  const cluster_secret secret("a secret of the cluster, 40 bytes long..");
  const auto worker = hello_of(node_kind::worker, 42), server = hello_of(node_kind::server, 42);
  const auto proof = membership_proof(secret, channel_side::connecting, worker, server);

  CHECK(proof_is_valid(secret, channel_side::connecting, worker, server, proof));
  CHECK_FALSE(proof_is_valid(cluster_secret("another secret of 32 bytes......"),
                             channel_side::connecting, worker, server, proof));
  // Reflected: the acceptor's proof would be over the same hellos from the other side.
  CHECK_FALSE(proof_is_valid(secret, channel_side::accepting, worker, server, proof));
  CHECK_FALSE(proof_is_valid(secret, channel_side::connecting, server, worker, proof));

  auto fresh = worker;
  fresh.challenge = fresh_nonce();
  CHECK_FALSE(proof_is_valid(secret, channel_side::connecting, fresh, server, proof));
  auto other_plan = server;
  other_plan.plan_hash = 43;
  CHECK_FALSE(proof_is_valid(secret, channel_side::connecting, worker, other_plan, proof));
  auto other_role = worker;
  other_role.role = node_kind::scheduler;
  CHECK_FALSE(proof_is_valid(secret, channel_side::connecting, other_role, server, proof));
  auto flipped = proof;
  flipped[31] ^= 1;
  CHECK_FALSE(proof_is_valid(secret, channel_side::connecting, worker, server, flipped));
}

TEST_CASE("nonces and generated secrets are fresh", "[cluster][admission]") {
  CHECK(fresh_nonce() != fresh_nonce());
  const auto a = cluster_secret::generate(), b = cluster_secret::generate();
  CHECK(a.bytes().size() == 64);
  CHECK(a.bytes().find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(a.bytes() != b.bytes());
}

TEST_CASE("secrets that are short, missing or readable by others are refused",
          "[cluster][admission]") {
  try {
    cluster_secret("short-secret");
    FAIL("a 12-byte secret was accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("12 bytes") != std::string::npos);
    CHECK(std::string(e.what()).find("short-secret") == std::string::npos);
  }

  CHECK(thrown_text("no/such/secret").find("no/such/secret: cannot read") != std::string::npos);

  const auto open_file = write_secret_file("0123456789abcdef0123456789abcdef\n", 0644);
  const auto open_error = thrown_text(open_file);
  CHECK(open_error.find("mode 0644") != std::string::npos);
  CHECK(open_error.find("0123456789abcdef") == std::string::npos);
  std::remove(open_file.c_str());

  const auto short_file = write_secret_file("tiny\n", 0600);
  CHECK(thrown_text(short_file).find("4 bytes") != std::string::npos);
  std::remove(short_file.c_str());

  const auto good_file = write_secret_file("0123456789abcdef0123456789abcdef\n", 0400);
  CHECK(cluster_secret::from_file(good_file).bytes() == "0123456789abcdef0123456789abcdef");
  std::remove(good_file.c_str());
}
