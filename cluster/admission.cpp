// HMAC-SHA256 membership proofs (see admission.hpp) on OpenSSL, which the platform keeps
// patched; nothing here implements a primitive itself.
#include <troupe/cluster/admission.hpp>

#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace troupe {

namespace {

constexpr char domain_tag[] = "troupe admission v1";

void append_u64(std::string& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void append_hello(std::string& out, const hello_message& hello) {
  out.append(reinterpret_cast<const char*>(hello.challenge.data()), hello.challenge.size());
  out.push_back(static_cast<char>(hello.role));
  append_u64(out, hello.plan_hash);
}

} // namespace

cluster_secret::cluster_secret(std::string bytes) : bytes_(std::move(bytes)) {
  if (bytes_.size() < min_bytes)
    throw std::invalid_argument("the cluster secret has " + std::to_string(bytes_.size())
                                + " bytes; at least " + std::to_string(min_bytes) + " are needed");
}

cluster_secret cluster_secret::from_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    throw std::runtime_error(path + ": cannot read the secret file: " + std::strerror(errno));
  if ((info.st_mode & 077) != 0) {
    std::ostringstream mode;
    mode << std::oct << (info.st_mode & 0777);
    throw std::runtime_error(path + ": the secret file may be read by other users (mode 0"
                             + mode.str() + "); chmod 600 it");
  }
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof())
    throw std::runtime_error(path + ": cannot read the secret file");
  while (!bytes.empty() && (bytes.back() == '\n' || bytes.back() == '\r'))
    bytes.pop_back();
  if (bytes.size() < min_bytes)
    throw std::runtime_error(path + ": the secret has " + std::to_string(bytes.size())
                             + " bytes; at least " + std::to_string(min_bytes) + " are needed");
  return cluster_secret(std::move(bytes));
}

cluster_secret cluster_secret::generate() {
  const auto random = fresh_nonce();
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  for (auto byte : random) {
    hex.push_back(digits[byte >> 4]);
    hex.push_back(digits[byte & 0xf]);
  }
  return cluster_secret(std::move(hex));
}

nonce fresh_nonce() {
  nonce out{};
  if (RAND_bytes(out.data(), static_cast<int>(out.size())) != 1)
    throw std::runtime_error("OpenSSL could not produce random bytes for a nonce");
  return out;
}

mac membership_proof(const cluster_secret& secret, channel_side prover_side,
                     const hello_message& prover, const hello_message& verifier) {
  std::string input(domain_tag, sizeof domain_tag);
  input.push_back(static_cast<char>(prover_side));
  append_hello(input, prover);
  append_hello(input, verifier);
  mac out{};
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), secret.bytes().data(), static_cast<int>(secret.bytes().size()),
            reinterpret_cast<const unsigned char*>(input.data()), input.size(), out.data(), &length)
      || length != out.size())
    throw std::runtime_error("OpenSSL's HMAC-SHA256 failed");
  return out;
}

bool proof_is_valid(const cluster_secret& secret, channel_side prover_side,
                    const hello_message& prover, const hello_message& verifier, const mac& proof) {
  const auto expected = membership_proof(secret, prover_side, prover, verifier);
  return CRYPTO_memcmp(expected.data(), proof.data(), expected.size()) == 0;
}

} // namespace troupe
