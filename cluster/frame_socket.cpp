// See frame_socket.hpp. Plain POSIX sockets: blocking reads and writes on threads of their own,
// woken for good by shutdown(2).
#include "cluster/frame_socket.hpp"

#include "cluster/local_socket.hpp"
#include "cluster/socket_address.hpp"
#include <troupe/cluster/tcp_congestion.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <caf/send.hpp>

#include <troupe/actors/actor_errors.hpp>

namespace troupe {

namespace {

std::string errno_text(int code) {
  return std::strerror(code);
}

std::string peer_of(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    return "an unknown peer";
  if (address.ss_family == AF_UNIX)
    return local_peer_of(fd);
  return address_of(reinterpret_cast<const sockaddr*>(&address));
}

// The addresses `host:port` resolves to (numeric port), or the resolver's complaint.
struct resolved {
  addrinfo* list = nullptr;
  std::string error;
  ~resolved() {
    if (list)
      ::freeaddrinfo(list);
  }
};

void resolve(resolved& out, const std::string& host, std::uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  const auto code = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &out.list);
  if (code != 0)
    out.error = std::string("cannot resolve '") + host + "': " + ::gai_strerror(code);
}

// Reads exactly `size` bytes: 1 when read, 0 at the end of the stream before all of them came,
// -1 on an error (errno says which).
int read_exactly(int fd, char* into, std::size_t size) {
  while (size > 0) {
    const auto got = ::recv(fd, into, size, MSG_WAITALL);
    if (got > 0) {
      into += got;
      size -= static_cast<std::size_t>(got);
    } else if (got == 0) {
      return 0;
    } else if (errno != EINTR) {
      return -1;
    }
  }
  return 1;
}

// Connects `fd` to `address` within `timeout`: 0, or the errno of the failure.
int connect_within(int fd, const addrinfo& address, std::chrono::milliseconds timeout) {
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int result = ::connect(fd, address.ai_addr, address.ai_addrlen) == 0 ? 0 : errno;
  if (result == EINPROGRESS) {
    pollfd waiting{fd, POLLOUT, 0};
    const auto ready =
      ::poll(&waiting, 1, static_cast<int>(std::min<std::int64_t>(timeout.count(), INT_MAX)));
    if (ready == 0) {
      result = ETIMEDOUT;
    } else if (ready < 0) {
      result = errno;
    } else {
      socklen_t length = sizeof result;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &result, &length);
    }
  }
  ::fcntl(fd, F_SETFL, flags);
  return result;
}

void join_or_detach(std::thread& thread) {
  if (!thread.joinable())
    return;
  // The last handle to the owner may go on one of the socket's own threads, destroying the
  // socket there: that thread is on its way out and cannot join itself.
  if (thread.get_id() == std::this_thread::get_id())
    thread.detach();
  else
    thread.join();
}

} // namespace

frame_socket::frame_socket(int fd) : fd_(fd), peer_(peer_of(fd)) {
  sockaddr_storage mine{};
  socklen_t length = sizeof mine;
  local_ = ::getsockname(fd_, reinterpret_cast<sockaddr*>(&mine), &length) == 0
           && mine.ss_family == AF_UNIX;
  if (local_) {
    widen_local_buffers(fd_);
    return;
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool frame_socket::set_congestion(const std::string& algorithm) {
  return !local_ && set_tcp_congestion(fd_, algorithm);
}

bool frame_socket::set_pacing(std::uint64_t bytes_per_second) {
  if (local_)
    return false;
  unsigned long rate = bytes_per_second == 0 ? ~0UL : static_cast<unsigned long>(bytes_per_second);
  if (::setsockopt(fd_, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof rate) != 0)
    return false;
  // 0: the host's default (net.ipv4.tcp_notsent_lowat, no limit unless set).
  const auto unsent = bytes_per_second == 0
                        ? 0
                        : std::min<std::uint64_t>(paced_unsent_bytes(bytes_per_second), INT_MAX);
  const int lowat = static_cast<int>(unsent);
  return ::setsockopt(fd_, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof lowat) == 0;
}

std::uint64_t frame_socket::unsent_limit() const {
  if (local_)
    return 0;
  int lowat = 0;
  socklen_t length = sizeof lowat;
  if (::getsockopt(fd_, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, &length) != 0)
    return 0;
  return static_cast<std::uint32_t>(lowat);
}

std::uint64_t frame_socket::pacing() const {
  if (local_)
    return 0;
  unsigned long rate = 0;
  socklen_t length = sizeof rate;
  if (::getsockopt(fd_, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, &length) != 0 || rate == ~0UL)
    return 0;
  return rate;
}

void frame_socket::set_sequence(std::vector<std::uint64_t> ranks,
                                std::chrono::milliseconds patience) {
  std::map<std::uint64_t, std::size_t> places;
  for (std::size_t i = 0; i < ranks.size(); ++i)
    if (!places.emplace(ranks[i], i).second)
      throw std::invalid_argument("a push sequence lists rank " + std::to_string(ranks[i])
                                  + " twice");
  std::lock_guard<std::mutex> lock(mutex_);
  sequence_ = std::move(ranks);
  place_in_sequence_ = std::move(places);
  written_in_cycle_.assign(sequence_.size(), false);
  next_place_ = 0;
  patience_ = patience;
}

std::size_t frame_socket::sequence_skips() const {
  return skips_.load();
}

// The sequenced push that may go now: the sequence's next, else one of a rank this cycle has
// written (a second source's). Called with the mutex held.
std::multimap<std::uint64_t, encoded_frame>::iterator frame_socket::next_sequenced() {
  if (sequenced_.empty())
    return sequenced_.end();
  auto next = sequenced_.find(sequence_[next_place_]);
  if (next != sequenced_.end())
    return next;
  for (auto it = sequenced_.begin(); it != sequenced_.end(); ++it)
    if (written_in_cycle_[place_in_sequence_.at(it->first)])
      return it;
  return sequenced_.end();
}

// Moves the sequence on past a push taken from sequenced_ (a second source's leaves it where it
// is). Called with the mutex held; `it` stays valid (the caller erases it).
void frame_socket::take_sequenced(std::multimap<std::uint64_t, encoded_frame>::iterator it) {
  const auto place = place_in_sequence_.at(it->first);
  if (written_in_cycle_[place])
    return;
  written_in_cycle_[place] = true;
  next_place_ = place + 1;
  while (next_place_ < sequence_.size() && written_in_cycle_[next_place_])
    ++next_place_;
  if (next_place_ >= sequence_.size()) { // the cycle is complete: the next step's begins
    written_in_cycle_.assign(sequence_.size(), false);
    next_place_ = 0;
  }
  awaited_since_ = std::chrono::steady_clock::now();
}

frame_socket::~frame_socket() {
  close();
  join_or_detach(reader_);
  join_or_detach(writer_);
  ::close(fd_);
}

caf::expected<std::shared_ptr<frame_socket>>
frame_socket::connect(const std::string& host, std::uint16_t port,
                      std::chrono::milliseconds timeout, bool same_host_shortcut) {
  const auto where = host + ":" + std::to_string(port);
  resolved addresses;
  resolve(addresses, host, port, false);
  if (!addresses.error.empty())
    return make_error(errc::peer_down, "cannot connect to " + where + ": " + addresses.error);
  std::string why = "no address";
  for (const auto* a = addresses.list; a != nullptr; a = a->ai_next) {
    if (same_host_shortcut)
      if (const int local = connect_local(a->ai_addr); local >= 0) {
        auto socket = std::make_shared<frame_socket>(local);
        socket->peer_ = address_of(a->ai_addr) + " (local socket)";
        return socket;
      }
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = errno_text(errno);
      continue;
    }
    const int failed = connect_within(fd, *a, timeout);
    if (failed == 0)
      return std::make_shared<frame_socket>(fd);
    why = failed == ETIMEDOUT ? "no answer within " + std::to_string(timeout.count()) + " ms"
                              : errno_text(failed);
    ::close(fd);
  }
  return make_error(errc::peer_down, "cannot connect to " + where + ": " + why);
}

void frame_socket::start(socket_owner_actor owner, std::size_t max_payload,
                         std::shared_ptr<receive_pool> pool, write_order order) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    order_ = order;
  }
  note_bytes();
  writer_ = std::thread([this, owner] {
    ::pthread_setname_np(::pthread_self(), "troupe.write"); // as profilers and top show it
    write_loop(owner);
  });
  reader_ =
    std::thread([this, owner = std::move(owner), max_payload, pool = std::move(pool)]() mutable {
      ::pthread_setname_np(::pthread_self(), "troupe.read");
      read_loop(std::move(owner), max_payload, std::move(pool));
    });
}

void frame_socket::note_bytes() {
  last_bytes_.store(std::chrono::steady_clock::now().time_since_epoch().count());
}

void frame_socket::read_loop(socket_owner_actor owner, std::size_t max_payload,
                             std::shared_ptr<receive_pool> pool) {
  auto closed = [&](int status, const char* when) {
    const int error = errno;
    const auto why = status == 0 ? std::string("the peer closed the connection") + when
                                 : "reading failed" + std::string(when) + ": " + errno_text(error);
    caf::anon_send(owner, socket_closed_atom::value, why);
  };
  char header[frame_header_bytes];
  for (;;) {
    if (const int status = read_exactly(fd_, header, sizeof header); status != 1)
      return closed(status, "");
    const auto announced = read_frame_header(header, max_payload);
    if (!announced.error.empty()) {
      caf::anon_send(owner, frame_error_atom::value, announced.error);
      // The stream cannot be framed again: what follows is read and dropped until the peer
      // (or this node, after saying why) closes.
      char sink[4096];
      for (;;) {
        const auto got = ::recv(fd_, sink, sizeof sink, 0);
        if (got == 0 || (got < 0 && errno != EINTR))
          break;
      }
      return closed(0, "");
    }
    note_bytes();
    auto payload = pool->acquire(announced.payload_bytes);
    for (std::size_t at = 0; at < payload->size();) {
      const auto piece = std::min(read_piece_bytes, payload->size() - at);
      if (const int status = read_exactly(fd_, payload->data() + at, piece); status != 1)
        return closed(status, " in the middle of a frame");
      at += piece;
      note_bytes();
    }
    caf::anon_send(owner, frame_in_atom::value, received_payload{std::move(payload)});
  }
}

void frame_socket::write_loop(socket_owner_actor owner) {
  std::vector<encoded_frame> batch;
  std::vector<iovec> pieces;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      for (;;) {
        if (closed_)
          return;
        if (holds_ == 0 && (!queue_.empty() || next_sequenced() != sequenced_.end()))
          break;
        if (holds_ > 0 || sequenced_.empty()) {
          wake_writer_.wait(lock);
          continue;
        }
        // Pushes wait, but not the sequence's next: wait for it, within the patience.
        if (wake_writer_.wait_until(lock, awaited_since_ + patience_) == std::cv_status::timeout
            && !closed_ && holds_ == 0 && queue_.empty() && next_sequenced() == sequenced_.end()
            && !sequenced_.empty()) {
          // Go on with the first waiting push after the awaited one in the sequence (every place
          // before the awaited one this cycle has written): the skipped ones, when they come,
          // go at once, as a repeat would.
          std::size_t place = next_place_;
          const auto awaited = sequence_[place];
          while (place + 1 < sequence_.size() && sequenced_.count(sequence_[place]) == 0)
            written_in_cycle_[place++] = true;
          next_place_ = place;
          const std::uint64_t skips = ++skips_;
          caf::anon_send(owner, sequence_skip_atom::value, awaited,
                         skips); // only enqueues: fine under the lock
        }
      }
      // fifo: everything queued goes out in as few system calls as the pieces allow. by_rank:
      // the lowest ranks, up to ranked_batch_bytes, so that a frame of a lower rank queued
      // while this batch is written waits for little more than one frame; frames not in the
      // sequence before the sequence's pushes.
      std::size_t bytes = 0;
      for (;;) {
        auto first = queue_.begin();
        const bool sequenced = first == queue_.end();
        if (sequenced && (first = next_sequenced()) == sequenced_.end())
          break;
        if (order_ == write_order::by_rank && !batch.empty()
            && bytes + first->second.bytes() > ranked_batch_bytes)
          break;
        bytes += first->second.bytes();
        batch.push_back(std::move(first->second));
        if (sequenced) {
          take_sequenced(first);
          sequenced_.erase(first);
        } else {
          queue_.erase(first);
        }
      }
    }
    pieces.clear();
    for (const auto& frame : batch)
      for (const auto& piece : frame.pieces())
        pieces.push_back(iovec{const_cast<char*>(piece.data), piece.size});
    std::size_t next = 0;
    while (next < pieces.size()) {
      msghdr message{};
      message.msg_iov = pieces.data() + next;
      message.msg_iovlen = std::min<std::size_t>(pieces.size() - next, IOV_MAX);
      const auto sent = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
      if (sent < 0) {
        if (errno == EINTR)
          continue;
        // The reader sees the shut-down connection and reports it to the owner.
        close();
        return;
      }
      // Skips what was written: whole pieces, then the front of a partly written one.
      auto left = static_cast<std::size_t>(sent);
      while (next < pieces.size() && left >= pieces[next].iov_len)
        left -= pieces[next++].iov_len;
      if (left > 0) {
        pieces[next].iov_base = static_cast<char*>(pieces[next].iov_base) + left;
        pieces[next].iov_len -= left;
      }
    }
    batch.clear(); // the frames' tensors are released here, once written
  }
}

void frame_socket::send(encoded_frame frame, std::uint64_t rank, bool sequenced) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_)
      return;
    if (sequenced && order_ == write_order::by_rank && place_in_sequence_.count(rank) != 0) {
      if (sequenced_.empty()) // the first push of a step: the patience counts from here
        awaited_since_ = std::chrono::steady_clock::now();
      sequenced_.emplace(rank, std::move(frame));
    } else {
      // A multimap inserts at the end of its equal range: equal ranks keep their queuing
      // order, and under fifo every frame has the same rank.
      queue_.emplace(order_ == write_order::by_rank ? rank : 0, std::move(frame));
    }
  }
  wake_writer_.notify_one();
}

frame_socket::holding::holding(frame_socket& socket) : socket_(socket) {
  std::lock_guard<std::mutex> lock(socket_.mutex_);
  ++socket_.holds_;
}

frame_socket::holding::~holding() {
  {
    std::lock_guard<std::mutex> lock(socket_.mutex_);
    --socket_.holds_;
  }
  socket_.wake_writer_.notify_one();
}

void frame_socket::close() {
  std::multimap<std::uint64_t, encoded_frame> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_)
      return;
    closed_ = true;
    dropped.swap(queue_);
    dropped.merge(sequenced_);
  }
  wake_writer_.notify_one();
  ::shutdown(fd_, SHUT_RDWR);
}

caf::expected<std::unique_ptr<listening_socket>>
listening_socket::bind(const std::string& host, std::uint16_t port, bool same_host_twin) {
  const auto where = host + ":" + std::to_string(port);
  resolved addresses;
  resolve(addresses, host, port, true);
  if (!addresses.error.empty())
    return make_error(errc::bad_request, "cannot listen on " + where + ": " + addresses.error);
  std::string why = "no address";
  for (const auto* a = addresses.list; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = errno_text(errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      sockaddr_storage bound{};
      socklen_t length = sizeof bound;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
      const auto* b = reinterpret_cast<const sockaddr*>(&bound);
      const int local = same_host_twin ? listen_local(b) : -1;
      // Non-blocking: the acceptor polls both, and a client gone between the poll and the
      // accept must not block it (accepted sockets do not inherit the flag).
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
      if (local >= 0)
        ::fcntl(local, F_SETFL, ::fcntl(local, F_GETFL) | O_NONBLOCK);
      const int stop = ::eventfd(0, EFD_CLOEXEC);
      if (stop < 0) {
        why = errno_text(errno);
        ::close(fd);
        if (local >= 0)
          ::close(local);
        break;
      }
      return std::unique_ptr<listening_socket>(new listening_socket(fd, local, stop, port_of(b)));
    }
    why = errno_text(errno);
    ::close(fd);
  }
  return make_error(errc::bad_request, "cannot listen on " + where + ": " + why);
}

listening_socket::~listening_socket() {
  stop();
  ::close(fd_);
  if (local_fd_ >= 0)
    ::close(local_fd_);
  ::close(stop_fd_);
}

void listening_socket::start(std::function<void(std::shared_ptr<frame_socket>)> accepted) {
  acceptor_ = std::thread([this, accepted = std::move(accepted)] {
    ::pthread_setname_np(::pthread_self(), "troupe.accept");
    for (;;) {
      const int fd = accept_one();
      if (fd < 0)
        return;
      accepted(std::make_shared<frame_socket>(fd));
    }
  });
}

void listening_socket::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!stopped_) {
    stopped_ = true;
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto written =
      ::write(stop_fd_, &one, sizeof one); // wakes the acceptor's poll
  }
  join_or_detach(acceptor_);
}

int listening_socket::accept_one() {
  for (;;) {
    pollfd ready[3] = {{stop_fd_, POLLIN, 0}, {fd_, POLLIN, 0}, {local_fd_, POLLIN, 0}};
    if (::poll(ready, local_fd_ >= 0 ? 3 : 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (ready[0].revents != 0)
      return -1; // stopped
    const int from = ready[1].revents != 0 ? fd_ : local_fd_;
    const int fd = ::accept4(from, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0)
      return fd;
    switch (errno) {
    case EINTR:
    case EAGAIN:
    case ECONNABORTED:
    case EPROTO:
      continue; // a client that gave up before it was accepted
    case EMFILE:
    case ENFILE:
    case ENOBUFS:
    case ENOMEM:
      // Out of descriptors or memory for now: the connection waits in the backlog.
      ::usleep(100 * 1000);
      continue;
    default:
      return -1; // a socket that cannot accept any more
    }
  }
}

} // namespace troupe
