// See raw_transport.hpp. Deliberately plain: what a hand-written socket loop achieves is the
// figure Troupe's channels are held to.
#include "apps/bench/raw_transport.hpp"
#include "apps/bench/timed_steps.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace troupe::bench {

namespace {

[[noreturn]] void fail(const std::string& call) {
  throw std::runtime_error("raw transport: " + call + ": " + std::strerror(errno));
}

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const auto n = ::write(fd, data, size);
    if (n <= 0)
      fail("write");
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// False at a clean end of stream before the first byte.
bool read_all(int fd, char* data, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const auto n = ::read(fd, data + done, size - done);
    if (n == 0 && done == 0)
      return false;
    if (n <= 0)
      fail("read");
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::uint64_t read_header(int fd, bool& open) {
  std::uint64_t length = 0;
  open = read_all(fd, reinterpret_cast<char*>(&length), sizeof length);
  return length;
}

// One connection: the reader hands each frame's size to the writer, which answers it.
void serve_connection(int fd) {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::uint64_t> answers;
  bool done = false;
  std::thread writer([&] {
    std::vector<char> reply;
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex);
      ready.wait(lock, [&] { return done || !answers.empty(); });
      if (answers.empty())
        return;
      const auto length = answers.front();
      answers.pop_front();
      lock.unlock();
      if (reply.size() < length)
        reply.resize(length, 1);
      write_all(fd, reinterpret_cast<const char*>(&length), sizeof length);
      write_all(fd, reply.data(), length);
    }
  });
  std::vector<char> frame;
  for (bool open = true;;) {
    const auto length = read_header(fd, open);
    if (!open || length > (std::uint64_t{1} << 30))
      break;
    frame.resize(length);
    read_all(fd, frame.data(), length);
    std::lock_guard<std::mutex> lock(mutex);
    answers.push_back(length);
    ready.notify_one();
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
    ready.notify_one();
  }
  writer.join();
  ::close(fd);
}

int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    fail("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
    fail("connect to 127.0.0.1:" + std::to_string(port));
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

} // namespace

void raw_serve(std::uint16_t& port, int connections) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0)
    fail("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0
      || ::listen(listener, 16) != 0)
    fail("bind/listen");
  socklen_t length = sizeof address;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  port = ntohs(address.sin_port);
  std::thread([listener, connections] {
    std::vector<std::thread> served;
    for (int i = 0; i < connections; ++i) {
      const int fd = ::accept(listener, nullptr, nullptr);
      if (fd < 0)
        break;
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      served.emplace_back(serve_connection, fd);
    }
    for (auto& t : served)
      t.join();
  }).detach();
}

double raw_worker(const raw_step_plan& plan, int warmup, int steps) {
  std::vector<int> fds;
  for (auto port : plan.ports)
    fds.push_back(connect_to(port));
  std::vector<char> payload(static_cast<std::size_t>(plan.frame_bytes), 2);
  std::vector<std::vector<char>> answers(fds.size(), std::vector<char>(payload.size()));
  const auto frame_length = static_cast<std::uint64_t>(plan.frame_bytes);
  auto step = [&](std::int64_t) {
    std::vector<std::thread> threads;
    for (std::size_t c = 0; c < fds.size(); ++c) {
      threads.emplace_back([&, c] {
        for (int f = 0; f < plan.frames.at(c); ++f) {
          write_all(fds[c], reinterpret_cast<const char*>(&frame_length), sizeof frame_length);
          write_all(fds[c], payload.data(), payload.size());
        }
      });
      threads.emplace_back([&, c] {
        for (int f = 0; f < plan.frames.at(c); ++f) {
          bool open = true;
          const auto length = read_header(fds[c], open);
          if (!open || length != frame_length)
            throw std::runtime_error("raw transport: a server answered short");
          read_all(fds[c], answers[c].data(), length);
        }
      });
    }
    for (auto& t : threads)
      t.join();
  };
  const double seconds = timed_steps(warmup, steps, step);
  for (int fd : fds)
    ::close(fd);
  return seconds;
}

} // namespace troupe::bench
