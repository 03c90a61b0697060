// See launcher_rank.hpp.
#include <troupe/cluster/launcher_rank.hpp>

#include <stdexcept>
#include <string>

namespace troupe {

launcher_place place_of_launcher_rank(int rank, int servers, int workers) {
  if (servers < 1 || workers < 1)
    throw std::invalid_argument("launcher rank: a cluster needs a server and a worker, got "
                                + std::to_string(servers) + " and " + std::to_string(workers));
  if (rank < 0 || rank > servers + workers)
    throw std::out_of_range("launcher rank " + std::to_string(rank) + " is not in 0.."
                            + std::to_string(servers + workers));
  if (rank == 0)
    return {node_kind::scheduler, 0};
  if (rank <= servers)
    return {node_kind::server, rank - 1};
  return {node_kind::worker, rank - 1 - servers};
}

} // namespace troupe
