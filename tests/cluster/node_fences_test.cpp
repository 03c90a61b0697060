// A node's terms: the one it stamps, the fenced ones it refuses (term 0, none, never is), and
// the word that it was fenced itself, which keeps the first reason given.
#include <catch2/catch.hpp>

#include <troupe/cluster/node_fences.hpp>

using namespace troupe;

TEST_CASE("a fenced term stays fenced with its first reason, term 0 is never fenced",
          "[cluster][fences]") {
  node_fences fences;
  CHECK(fences.own() == 0);
  fences.set_own(4);
  CHECK(fences.own() == 4);
  CHECK_FALSE(fences.fenced(3));
  CHECK(fences.fence(3, "lost at 10:00: no frame for 3004 ms"));
  CHECK_FALSE(fences.fence(3, "another word"));
  REQUIRE(fences.fenced(3));
  CHECK(*fences.fenced(3) == "lost at 10:00: no frame for 3004 ms");
  CHECK_FALSE(fences.fenced(4));
  CHECK_FALSE(fences.fence(0, "no term"));
  CHECK_FALSE(fences.fenced(0));
}

TEST_CASE("a node told it is fenced keeps the first word of it", "[cluster][fences]") {
  node_fences fences;
  CHECK_FALSE(fences.fenced_here());
  fences.note_fenced_here("fenced by worker_0: lost at 10:00");
  fences.note_fenced_here("fenced by the scheduler: lost at 10:00");
  REQUIRE(fences.fenced_here());
  CHECK(*fences.fenced_here() == "fenced by worker_0: lost at 10:00");
}

TEST_CASE("a fenced error is the loss it names, with exit status 3", "[cluster][fences]") {
  const fenced_error e("server_0 (term 2): fenced by server_1");
  CHECK(e.code() == errc::peer_down);
  CHECK(std::string(e.what()) == "server_0 (term 2): fenced by server_1");
  CHECK(fenced_exit_status == 3);
}
