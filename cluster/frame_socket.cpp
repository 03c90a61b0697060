// See frame_socket.hpp. Blocking reads and writes on threads of their own, woken for good by
// shutting the connection down; every decision of order is the send order's.
#include "cluster/frame_socket.hpp"

#include <algorithm>
#include <utility>

#include <pthread.h>

#include <caf/send.hpp>

#include "cluster/transport/stream_connection.hpp"
#include "cluster/transport/tcp_connection.hpp"

namespace troupe {

namespace {

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

frame_socket::frame_socket(std::unique_ptr<connection> stream) : stream_(std::move(stream)) {}

frame_socket::~frame_socket() {
  close();
  join_or_detach(reader_);
  join_or_detach(writer_);
}

caf::expected<std::shared_ptr<frame_socket>>
frame_socket::connect(const std::string& host, std::uint16_t port,
                      std::chrono::milliseconds timeout, bool same_host_shortcut) {
  auto stream = connect_stream(host, port, timeout, same_host_shortcut);
  if (!stream)
    return std::move(stream.error());
  return std::make_shared<frame_socket>(std::move(*stream));
}

void frame_socket::set_sequence(std::vector<std::uint64_t> ranks,
                                std::chrono::milliseconds patience) {
  std::lock_guard<std::mutex> lock(mutex_);
  order_.set_sequence(std::move(ranks), patience);
}

std::size_t frame_socket::sequence_skips() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return order_.skips();
}

void frame_socket::start(socket_owner_actor owner, std::size_t max_payload,
                         std::shared_ptr<receive_pool> pool, write_order order) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    order_.set_order(order);
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
  auto closed = [&](read_status status, const char* when) {
    const int error = errno;
    const auto why = status == read_status::ended
                       ? std::string("the peer closed the connection") + when
                       : "reading failed" + std::string(when) + ": " + errno_text(error);
    caf::anon_send(owner, socket_closed_atom::value, why);
  };
  char header[frame_header_bytes];
  for (;;) {
    if (const auto status = stream_->read_exactly(header, sizeof header);
        status != read_status::complete)
      return closed(status, "");
    const auto announced = read_frame_header(header, max_payload);
    if (!announced.error.empty()) {
      caf::anon_send(owner, frame_error_atom::value, announced.error);
      // The stream cannot be framed again: what follows is read and dropped until the peer
      // (or this node, after saying why) closes.
      stream_->discard_until_end();
      return closed(read_status::ended, "");
    }
    note_bytes();
    auto payload = pool->acquire(announced.payload_bytes);
    for (std::size_t at = 0; at < payload->size();) {
      const auto piece = std::min(read_piece_bytes, payload->size() - at);
      if (const auto status = stream_->read_exactly(payload->data() + at, piece);
          status != read_status::complete)
        return closed(status, " in the middle of a frame");
      at += piece;
      note_bytes();
    }
    caf::anon_send(owner, frame_in_atom::value, received_payload{std::move(payload)});
  }
}

bool frame_socket::next_batch(const socket_owner_actor& owner, std::vector<encoded_frame>& batch) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (closed_)
      return false;
    if (holds_ == 0 && order_.ready())
      break;
    const auto patience_ends = holds_ == 0 ? order_.patience_ends() : std::nullopt;
    if (!patience_ends) {
      wake_writer_.wait(lock);
      continue;
    }
    // Pushes wait, but not the sequence's next: wait for it, within the patience.
    wake_writer_.wait_until(lock, *patience_ends);
    if (closed_ || holds_ > 0)
      continue;
    if (const auto awaited = order_.give_up_waiting(std::chrono::steady_clock::now()))
      caf::anon_send(owner, sequence_skip_atom::value, *awaited,
                     std::uint64_t{order_.skips()}); // only enqueues: fine under the lock
  }
  order_.take_batch(batch, std::chrono::steady_clock::now());
  return true;
}

void frame_socket::write_loop(socket_owner_actor owner) {
  std::vector<encoded_frame> batch;
  std::vector<frame_piece> pieces;
  while (next_batch(owner, batch)) {
    pieces.clear();
    for (const auto& frame : batch)
      pieces.insert(pieces.end(), frame.pieces().begin(), frame.pieces().end());
    if (!stream_->write(pieces)) {
      close(); // the reader sees the shut-down connection and reports it to the owner
      return;
    }
    batch.clear(); // the frames' tensors are released here, once written
  }
}

void frame_socket::send(encoded_frame frame, std::uint64_t rank, bool sequenced) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_)
      return;
    order_.queue(std::move(frame), rank, sequenced, std::chrono::steady_clock::now());
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
  std::vector<encoded_frame> dropped; // released outside the lock
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_)
      return;
    closed_ = true;
    dropped = order_.drop_all();
  }
  wake_writer_.notify_one();
  stream_->shut_down();
}

caf::expected<std::unique_ptr<listening_socket>>
listening_socket::bind(const std::string& host, std::uint16_t port, bool same_host_twin) {
  auto bound = tcp_listener::bind(host, port, same_host_twin);
  if (!bound)
    return std::move(bound.error());
  return std::make_unique<listening_socket>(std::move(*bound));
}

listening_socket::~listening_socket() {
  stop();
}

void listening_socket::start(std::function<void(std::shared_ptr<frame_socket>)> accepted) {
  std::lock_guard<std::mutex> lock(mutex_);
  acceptor_ = std::thread([this, accepted = std::move(accepted)] {
    ::pthread_setname_np(::pthread_self(), "troupe.accept");
    while (auto stream = listening_->accept())
      accepted(std::make_shared<frame_socket>(std::move(stream)));
  });
}

void listening_socket::stop() {
  listening_->stop();
  std::lock_guard<std::mutex> lock(mutex_);
  join_or_detach(acceptor_);
}

} // namespace troupe
