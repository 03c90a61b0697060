// place_of_launcher_rank: the launcher-rank rule `troupe node` tells roles and ranks by.
#include <catch2/catch.hpp>

#include <troupe/cluster/launcher_rank.hpp>

using namespace troupe;

TEST_CASE("launcher ranks are the scheduler, then the servers, then the workers",
          "[cluster][rank]") {
  const int servers = 2, workers = 3;
  const node_kind roles[] = {node_kind::scheduler, node_kind::server, node_kind::server,
                             node_kind::worker,    node_kind::worker, node_kind::worker};
  const int ranks[] = {0, 0, 1, 0, 1, 2};
  for (int r = 0; r < 1 + servers + workers; ++r) {
    const auto place = place_of_launcher_rank(r, servers, workers);
    CHECK(place.role == roles[r]);
    CHECK(place.rank == ranks[r]);
  }
}

TEST_CASE("a launcher rank outside the cluster is refused", "[cluster][rank]") {
  CHECK_THROWS_AS(place_of_launcher_rank(6, 2, 3), std::out_of_range);
  CHECK_THROWS_AS(place_of_launcher_rank(-1, 2, 3), std::out_of_range);
  CHECK_THROWS_AS(place_of_launcher_rank(0, 0, 3), std::invalid_argument);
  CHECK_THROWS_AS(place_of_launcher_rank(0, 1, 0), std::invalid_argument);
}
