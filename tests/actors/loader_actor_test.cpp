// The loader actor serves an epoch's batches in order, equal to what the batch source makes,
// then the end mark; a new epoch starts over.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <set>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/loader_actor.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/io/dataset.hpp>

#include "tests/io/record_files.hpp"

using namespace troupe;

namespace {

std::shared_ptr<const batch_source> small_source() {
  dataset_options d;
  d.name = "synthetic";
  d.synthetic_shape = {1, 4, 4};
  d.synthetic_size = 50;
  batch_source_options b;
  b.batch_size = 16; // 3 full batches and one of 2
  b.seed = 7;
  return std::make_shared<const batch_source>(open_dataset(d), b);
}

loader_item next(caf::scoped_actor& self, const loader_actor& loader) {
  loader_item out;
  self->request(loader, std::chrono::seconds(10), next_atom::value)
    .receive([&](loader_item& x) { out = std::move(x); },
             [&](caf::error&) { FAIL("loader failed"); });
  return out;
}

bool same_batch(const batch& a, const batch& b) {
  if (a.labels != b.labels || a.images.shape() != b.images.shape())
    return false;
  return std::equal(a.images.data(), a.images.data() + a.images.numel(), b.images.data());
}

} // namespace

TEST_CASE("loader serves every batch of the epoch in order, then the end mark") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto source = small_source();
  for (int depth : {1, 3}) {
    auto loader = spawn_loader(sys, source, loader_options{depth});
    self->send(loader, epoch_atom::value, std::int64_t{2});
    for (std::int64_t i = 0; i < source->batches_per_epoch(); ++i) {
      auto item = next(self, loader);
      REQUIRE_FALSE(item.end);
      CHECK(item.data.epoch == 2);
      CHECK(item.data.index == i);
      CHECK(same_batch(item.data, source->make(2, i)));
    }
    CHECK(next(self, loader).end);
    CHECK(next(self, loader).end); // asking again is harmless
    self->send(loader, epoch_atom::value, std::int64_t{3});
    auto first = next(self, loader);
    CHECK(first.data.epoch == 3);
    CHECK(first.data.index == 0);
    self->send_exit(loader, caf::exit_reason::user_shutdown);
  }
}

TEST_CASE("loader answers `next` before any epoch with the end mark") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto loader = spawn_loader(sys, small_source());
  CHECK(next(self, loader).end);
  self->send_exit(loader, caf::exit_reason::user_shutdown);
}

TEST_CASE("loader never writes into a batch its receiver still holds, and reuses released ones") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto source = small_source();
  auto loader = spawn_loader(sys, source, loader_options{2});
  // Held: two epochs of batches kept while the loader builds on; each stays what it was.
  std::vector<batch> held;
  for (std::int64_t epoch : {0, 1}) {
    self->send(loader, epoch_atom::value, epoch);
    for (auto item = next(self, loader); !item.end; item = next(self, loader))
      held.push_back(std::move(item.data));
  }
  REQUIRE(held.size() == static_cast<std::size_t>(2 * source->batches_per_epoch()));
  std::set<const float*> storages;
  for (const auto& b : held) {
    CHECK(same_batch(b, source->make(b.epoch, b.index)));
    storages.insert(b.images.data());
  }
  CHECK(storages.size() == held.size()); // no two held batches share storage
  // Released: once nothing else holds them, the first buffers handed out (the loader keeps
  // those) carry later batches. Epoch 2's batches are all kept, so none of its storage can
  // be an address malloc handed back after a free.
  const std::set<const float*> pooled{held[0].images.data(), held[1].images.data()};
  const auto shape = held[0].images.shape();
  held.clear();
  // Whatever storage was freed just now goes to these, not to the loader's next batches: a
  // match below is a buffer the loader kept, never an address malloc gave out again.
  std::vector<tensor> occupy;
  for (int i = 0; i < 32; ++i)
    occupy.push_back(tensor::uninitialized(shape));
  self->send(loader, epoch_atom::value, std::int64_t{2});
  std::vector<batch> kept;
  std::size_t recycled = 0;
  for (auto item = next(self, loader); !item.end; item = next(self, loader)) {
    CHECK(same_batch(item.data, source->make(2, item.data.index)));
    recycled += pooled.count(item.data.images.data());
    kept.push_back(std::move(item.data));
  }
  CHECK(recycled == 2);
  self->send_exit(loader, caf::exit_reason::user_shutdown);
}

// A .rec whose record 1 is not a JPEG (tests/io/record_files.hpp writes it from the format).
std::string corrupt_record_file() {
  const std::string path = "troupe_loader_corrupt_test.rec";
  troupe::test::bytes file;
  for (std::uint64_t i = 0; i < 4; ++i) {
    const auto image =
      i == 1 ? troupe::test::bytes(64, 0x5a) : troupe::test::solid_jpeg(8, 8, 10, 20, 30);
    troupe::test::append(
      file, troupe::test::frame(0, troupe::test::image_payload({float(i % 2)}, i, image)));
  }
  std::ofstream(path, std::ios::binary)
    .write(reinterpret_cast<const char*>(file.data()), std::streamsize(file.size()));
  return path;
}

TEST_CASE("a batch that cannot be built: every later `next` gets the reason, the loader stays up") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  dataset_options d;
  d.name = "recordio";
  d.dir = corrupt_record_file();
  d.record_shape = {3, 8, 8};
  d.record_classes = 2;
  batch_source_options b;
  b.batch_size = 2;
  b.shuffle = false;
  auto loader = spawn_loader(sys, std::make_shared<const batch_source>(open_dataset(d), b), {});
  self->monitor(loader);
  self->send(loader, epoch_atom::value, std::int64_t{0});
  // Asked after the failed build (prefetch fails at once) and once more: both times the reason,
  // never CAF's request_receiver_down, which a loader that quit would give a late asker.
  for (int ask = 0; ask < 2; ++ask) {
    caf::error reason;
    self->request(loader, std::chrono::seconds(10), next_atom::value)
      .receive([&](loader_item&) { FAIL("a batch holding a corrupt record was served"); },
               [&](caf::error& err) { reason = std::move(err); });
    REQUIRE(reason);
    CHECK(troupe_code(reason) == errc::bad_data);
    CHECK_THAT(error_text(reason), Catch::Contains("record 1"));
  }
  self->send_exit(loader, caf::exit_reason::user_shutdown);
  self->receive(
    [&](caf::down_msg& down) { CHECK(down.reason == caf::exit_reason::user_shutdown); });
  std::remove(d.dir.c_str());
}
