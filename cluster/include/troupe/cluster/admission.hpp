// Admission of a peer: both ends of a new connection prove that they hold the cluster secret
// before either accepts anything else (docs/protocol.md, "Admission").
//
// Each side sends a hello with 32 fresh random bytes (its nonce), then a proof: HMAC-SHA256
// keyed with the secret over a domain tag, the prover's direction (the side that connected or
// the side that accepted) and both hellos (nonces, roles, plan hashes). Fresh nonces on both
// sides defeat replay; the direction defeats reflecting a peer's own proof back at it; binding
// the hellos means a proof made for one conversation is worth nothing in another. A proof
// admits a peer; it does not protect what follows (that is TLS's job, an option).
//
// The secret never appears in logs, argv or a message: only its MACs travel.
//
// Thread-safety: pure functions, except that fresh_nonce draws from OpenSSL's generator
// (thread-safe).
#pragma once

#include <string>

#include <troupe/cluster/wire_messages.hpp>

namespace troupe {

/// The shared secret of one cluster: at least min_bytes bytes.
class cluster_secret {
public:
  static constexpr std::size_t min_bytes = 16;
  /// Throws std::invalid_argument if `bytes` is shorter than min_bytes (without echoing it).
  explicit cluster_secret(std::string bytes);
  /// The file's contents without a trailing newline. Throws std::runtime_error naming the
  /// file if it cannot be read, is too short, or other users may read it (mode & 077).
  static cluster_secret from_file(const std::string& path);
  /// 32 random bytes, written as 64 hex digits (what `troupe launch` makes per run).
  static cluster_secret generate();

  const std::string& bytes() const { return bytes_; }

private:
  std::string bytes_;
};

/// 32 bytes from OpenSSL's generator; throws std::runtime_error if it fails.
nonce fresh_nonce();

enum class channel_side : std::uint8_t { connecting, accepting };

/// The proof the side `prover_side` sends after both hellos (`prover`'s own and `verifier`'s).
mac membership_proof(const cluster_secret& secret, channel_side prover_side,
                     const hello_message& prover, const hello_message& verifier);

/// Whether `proof` is the proof the peer on `prover_side` owes; compares in constant time.
bool proof_is_valid(const cluster_secret& secret, channel_side prover_side,
                    const hello_message& prover, const hello_message& verifier, const mac& proof);

} // namespace troupe
