// A `troupe node`'s place from flags and launcher environments: each family, precedence between
// them, every contradiction and malformed value, rank-to-role boundaries and Slurm host lists.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "apps/flags.hpp"
#include "apps/node_identity.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

node_flags flags(std::string role, std::string scheduler = "", int servers = -1, int workers = -1) {
  node_flags f;
  f.role = std::move(role);
  f.scheduler = std::move(scheduler);
  f.server_nodes = servers;
  f.worker_nodes = workers;
  return f;
}

// The usage_error's message, or "(no error)": other exception types fail the test.
std::string error_of(const node_flags& f, const environment& env) {
  try {
    resolve_node_identity(f, env);
  } catch (const usage_error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string host_list_error(const std::string& list) {
  try {
    expand_host_list(list);
  } catch (const usage_error& e) {
    return e.what();
  }
  return "(no error)";
}

const environment dmlc = {{"DMLC_ROLE", "server"},       {"DMLC_PS_ROOT_URI", "10.0.0.1"},
                          {"DMLC_PS_ROOT_PORT", "9000"}, {"DMLC_NUM_SERVER", "2"},
                          {"DMLC_NUM_WORKER", "3"},      {"DMLC_TASK_ID", "1"}};

environment with(environment env, const std::string& name, const std::string& value) {
  env[name] = value;
  return env;
}

environment without(environment env, const std::string& name) {
  env.erase(name);
  return env;
}

environment ompi(const std::string& rank, const std::string& size) {
  return {{"OMPI_COMM_WORLD_RANK", rank},
          {"OMPI_COMM_WORLD_SIZE", size},
          {"TROUPE_SCHEDULER", "head:9000"}};
}

environment slurm(const std::string& rank) {
  return {{"SLURM_PROCID", rank}, {"SLURM_NTASKS", "6"}, {"SLURM_JOB_NODELIST", "gpu[07-09],cpu1"}};
}

} // namespace

TEST_CASE("flags alone place a node", "[node_identity]") {
  auto id = resolve_node_identity(flags("worker", "head:9000", 2, 3), {});
  CHECK(id.role == node_kind::worker);
  CHECK(id.scheduler_host == "head");
  CHECK(id.scheduler_port == 9000);
  CHECK(id.server_nodes == 2);
  CHECK(id.worker_nodes == 3);
  CHECK(id.rank == -1);
  CHECK(id.source == "flags");

  SECTION("counts: flags over the config, the config's 0 is no count, -1 when nobody says") {
    auto f = flags("server", "head:9000", 4);
    f.config_server_nodes = 1;
    f.config_worker_nodes = 5;
    id = resolve_node_identity(f, {});
    CHECK(id.server_nodes == 4);
    CHECK(id.worker_nodes == 5);
    f.config_worker_nodes = 0;
    CHECK(resolve_node_identity(f, {}).worker_nodes == -1);
  }
  SECTION("IPv6 in brackets, and the scheduler may ask for any port") {
    id = resolve_node_identity(flags("worker", "[::1]:9000"), {});
    CHECK(id.scheduler_host == "::1");
    CHECK(id.scheduler_port == 9000);
    id = resolve_node_identity(flags("scheduler", "0.0.0.0:0"), {});
    CHECK(id.scheduler_port == 0);
  }
  SECTION("TROUPE_SCHEDULER stands in for --scheduler and must agree with it") {
    id = resolve_node_identity(flags("worker"), {{"TROUPE_SCHEDULER", "h:7"}});
    CHECK(id.scheduler_host == "h");
    CHECK(id.scheduler_port == 7);
    CHECK(error_of(flags("worker", "h:7"), {{"TROUPE_SCHEDULER", "h:7"}}) == "(no error)");
    CHECK(error_of(flags("worker", "h:8"), {{"TROUPE_SCHEDULER", "h:7"}})
          == "--scheduler h:8 contradicts TROUPE_SCHEDULER=h:7");
    CHECK(error_of(flags("worker"), {{"TROUPE_SCHEDULER", "h"}})
          == "TROUPE_SCHEDULER=h: expected HOST:PORT");
    CHECK(error_of(flags("worker"), {{"TROUPE_SCHEDULER", "h:0"}})
          == "TROUPE_SCHEDULER=h:0: the port '0' is not a whole number between 1 and 65535");
  }
}

TEST_CASE("flags alone: what is missing or malformed is named", "[node_identity]") {
  CHECK(error_of({}, {})
        == "troupe node needs --role scheduler|server|worker (or DMLC_ROLE, an MPI or Slurm rank)");
  // An empty variable counts as unset.
  CHECK_THAT(error_of({}, {{"DMLC_ROLE", ""}, {"SLURM_PROCID", ""}}), Contains("needs --role"));
  CHECK(error_of(flags("worker"), {})
        == "--role worker needs --scheduler HOST:PORT or TROUPE_SCHEDULER");
  CHECK(error_of(flags("boss", "h:1"), {})
        == "--role must be scheduler, server or worker, got 'boss'");
  CHECK(error_of(flags("worker", "h:1", 0), {})
        == "--server-nodes must be between 1 and 1024, got 0");
  CHECK(error_of(flags("worker", "h:1", 1, 2000), {})
        == "--worker-nodes must be between 1 and 1024, got 2000");
  CHECK(error_of(flags("worker", "head"), {}) == "--scheduler head: expected HOST:PORT");
  CHECK(error_of(flags("worker", ":9000"), {}) == "--scheduler :9000: the host is empty");
  CHECK(error_of(flags("worker", "[]:9000"), {}) == "--scheduler []:9000: the host is empty");
  CHECK(error_of(flags("worker", "::1:9000"), {})
        == "--scheduler ::1:9000: an IPv6 host goes in brackets, as [::1]:9000");
  CHECK(error_of(flags("worker", "[::1]9000"), {})
        == "--scheduler [::1]9000: expected [IPV6]:PORT");
  CHECK(error_of(flags("worker", "[::1:9000"), {})
        == "--scheduler [::1:9000: expected [IPV6]:PORT");
  for (std::string port : {"", "x", "90x", "+90", " 90", "-1", "65536", "99999999999999999999"})
    CHECK(error_of(flags("worker", "h:" + port), {})
          == "--scheduler h:" + port + ": the port '" + port
               + "' is not a whole number between 0 and 65535");
  CHECK(error_of(flags("worker", "h:0"), {})
        == "--scheduler h:0: port 0 (any free port) is for the scheduler only; a worker must "
           "name the scheduler's port");
}

TEST_CASE("the dmlc tracker's variables place a node", "[node_identity]") {
  auto id = resolve_node_identity({}, dmlc);
  CHECK(id.role == node_kind::server);
  CHECK(id.scheduler_host == "10.0.0.1");
  CHECK(id.scheduler_port == 9000);
  CHECK(id.server_nodes == 2);
  CHECK(id.worker_nodes == 3);
  CHECK(id.rank == -1); // DMLC_TASK_ID numbers one role's nodes only
  CHECK(id.source == "dmlc");

  SECTION("flags agreeing with it are fine") {
    id = resolve_node_identity(flags("server", "10.0.0.1:9000", 2, 3), dmlc);
    CHECK(id.role == node_kind::server);
    CHECK(id.source == "dmlc");
  }
  SECTION("its counts win over the config's; without them the config's count") {
    node_flags f;
    f.config_server_nodes = 7;
    f.config_worker_nodes = 8;
    CHECK(resolve_node_identity(f, dmlc).worker_nodes == 3);
    id = resolve_node_identity(f, without(without(dmlc, "DMLC_NUM_WORKER"), "DMLC_NUM_SERVER"));
    CHECK(id.server_nodes == 7);
    CHECK(id.worker_nodes == 8);
    CHECK(resolve_node_identity({}, without(dmlc, "DMLC_NUM_WORKER")).worker_nodes == -1);
  }
  SECTION("--scheduler can stand in for a missing address variable") {
    id = resolve_node_identity(flags("", "10.0.0.1:9001"), without(dmlc, "DMLC_PS_ROOT_PORT"));
    CHECK(id.scheduler_port == 9001);
    id = resolve_node_identity(flags("", "h:9000"), without(dmlc, "DMLC_PS_ROOT_URI"));
    CHECK(id.scheduler_host == "h");
  }
  SECTION("it comes before MPI and Slurm") {
    auto env = with(with(dmlc, "OMPI_COMM_WORLD_RANK", "0"), "SLURM_PROCID", "0");
    CHECK(resolve_node_identity({}, env).source == "dmlc");
  }
}

TEST_CASE("dmlc: contradictions and malformed values are named", "[node_identity]") {
  CHECK(error_of(flags("worker"), dmlc) == "--role worker contradicts DMLC_ROLE=server");
  CHECK(error_of(flags("", "h:9000"), dmlc)
        == "--scheduler h:9000 contradicts DMLC_PS_ROOT_URI=10.0.0.1 DMLC_PS_ROOT_PORT=9000");
  CHECK(error_of(flags("", "10.0.0.1:1"), dmlc)
        == "--scheduler 10.0.0.1:1 contradicts DMLC_PS_ROOT_URI=10.0.0.1 DMLC_PS_ROOT_PORT=9000");
  CHECK(error_of(flags("", "h:1"), without(dmlc, "DMLC_PS_ROOT_URI"))
        == "--scheduler h:1 contradicts DMLC_PS_ROOT_PORT=9000");
  CHECK(error_of(flags("", "", 1), dmlc) == "--server-nodes 1 contradicts DMLC_NUM_SERVER=2");
  CHECK(error_of(flags("", "", -1, 2), dmlc) == "--worker-nodes 2 contradicts DMLC_NUM_WORKER=3");
  CHECK(error_of({}, with(dmlc, "DMLC_ROLE", "Server"))
        == "DMLC_ROLE must be scheduler, server or worker, got 'Server'");
  for (auto name : {"DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT"})
    CHECK(error_of({}, without(dmlc, name))
          == "DMLC_ROLE=server needs DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT (the scheduler's "
             "address), or --scheduler HOST:PORT");
  for (std::string port : {"0", "65536", "9000x", "+9000", " 9000"})
    CHECK(error_of({}, with(dmlc, "DMLC_PS_ROOT_PORT", port))
          == "DMLC_PS_ROOT_PORT=" + port + " is not a whole number between 1 and 65535");
  CHECK(error_of({}, with(dmlc, "DMLC_NUM_SERVER", "0"))
        == "DMLC_NUM_SERVER=0 is not a whole number between 1 and 1024");
  CHECK(error_of({}, with(dmlc, "DMLC_NUM_WORKER", "three"))
        == "DMLC_NUM_WORKER=three is not a whole number between 1 and 1024");
  CHECK(error_of(flags("", "10.0.0.1:0"), with(dmlc, "DMLC_ROLE", "scheduler"))
        == "--scheduler 10.0.0.1:0 contradicts DMLC_PS_ROOT_URI=10.0.0.1 DMLC_PS_ROOT_PORT=9000");
}

TEST_CASE("an MPI rank maps to a role at the boundaries", "[node_identity]") {
  // 1 scheduler + 2 servers + 3 workers = 6 ranks.
  auto f = flags("", "", 2, 3);
  const std::pair<const char*, const char*> expected[] = {
    {"0", "scheduler"}, {"1", "server"}, {"2", "server"}, {"3", "worker"}, {"5", "worker"}};
  for (auto [rank, role] : expected) {
    auto id = resolve_node_identity(f, ompi(rank, "6"));
    CHECK(to_string(id.role) == std::string(role));
    CHECK(id.rank == std::stoi(rank));
    CHECK(id.server_nodes == 2);
    CHECK(id.worker_nodes == 3);
    CHECK(id.scheduler_host == "head");
    CHECK(id.scheduler_port == 9000);
    CHECK(id.source == "mpi");
  }
  CHECK(error_of(f, ompi("6", "6"))
        == "OMPI_COMM_WORLD_RANK=6 is not below OMPI_COMM_WORLD_SIZE=6");
}

TEST_CASE("MPI: counts from flags, config or the size", "[node_identity]") {
  SECTION("one count is enough with a size") {
    auto id = resolve_node_identity(flags("", "", 2), ompi("3", "6"));
    CHECK(id.worker_nodes == 3);
    CHECK(id.role == node_kind::worker);
    id = resolve_node_identity(flags("", "", -1, 3), ompi("2", "6"));
    CHECK(id.server_nodes == 2);
    CHECK(id.role == node_kind::server);
  }
  SECTION("the config's counts, the flags over them") {
    node_flags f;
    f.config_server_nodes = 1;
    f.config_worker_nodes = 4;
    CHECK(resolve_node_identity(f, ompi("1", "6")).role == node_kind::server);
    f.server_nodes = 2; // each count on its own: 2 from the flag, 3 from the config
    f.config_worker_nodes = 3;
    auto id = resolve_node_identity(f, ompi("2", "6"));
    CHECK(id.role == node_kind::server);
    CHECK(id.server_nodes == 2);
    f.config_worker_nodes = 0; // the config's "one process": the size leaves 3
    CHECK(resolve_node_identity(f, ompi("3", "6")).worker_nodes == 3);
  }
  SECTION("errors name the flags and both numbers") {
    CHECK(error_of({}, ompi("1", "6"))
          == "OMPI_COMM_WORLD_RANK=1 needs --server-nodes and --worker-nodes (or the config's "
             "cluster counts) to tell its role; with OMPI_COMM_WORLD_SIZE=6 one of them is enough");
    CHECK(error_of(flags("", "", 2, 2), ompi("1", "6"))
          == "OMPI_COMM_WORLD_SIZE=6 but 1 scheduler + 2 servers (--server-nodes 2) + 2 workers "
             "(--worker-nodes 2) = 5");
    node_flags f = flags("", "", 1);
    f.config_worker_nodes = 1;
    CHECK(error_of(f, ompi("1", "6"))
          == "OMPI_COMM_WORLD_SIZE=6 but 1 scheduler + 1 server (--server-nodes 1) + 1 worker "
             "(cluster.worker_nodes = 1) = 3");
    CHECK(error_of(flags("", "", 5), ompi("1", "6"))
          == "OMPI_COMM_WORLD_SIZE=6 leaves no worker beside the scheduler and 5 servers "
             "(--server-nodes 5)");
    CHECK(error_of(flags("", "", -1, 1), ompi("1", "2"))
          == "OMPI_COMM_WORLD_SIZE=2 leaves no server beside the scheduler and 1 worker "
             "(--worker-nodes 1)");
  }
}

TEST_CASE("MPI: role flag, scheduler address and malformed values", "[node_identity]") {
  auto f = flags("", "", 2, 3);
  CHECK(resolve_node_identity(flags("worker", "", 2, 3), ompi("3", "6")).role == node_kind::worker);
  CHECK(error_of(flags("worker", "", 2, 3), ompi("2", "6"))
        == "--role worker contradicts OMPI_COMM_WORLD_RANK=2, a server among 1 scheduler + 2 "
           "servers + 3 workers");
  CHECK(error_of(flags("server", "", 2, 3), ompi("0", "6"))
        == "--role server contradicts OMPI_COMM_WORLD_RANK=0, a scheduler among 1 scheduler + 2 "
           "servers + 3 workers");
  // Without counts, --role is taken as given: there is nothing to check it against.
  auto id = resolve_node_identity(flags("worker"), ompi("4", "6"));
  CHECK(id.role == node_kind::worker);
  CHECK(id.rank == 4);
  CHECK(id.server_nodes == -1);

  CHECK(
    resolve_node_identity(flags("", "other:1", 2, 3), without(ompi("1", "6"), "TROUPE_SCHEDULER"))
      .scheduler_host
    == "other");
  CHECK(error_of(f, without(ompi("1", "6"), "TROUPE_SCHEDULER"))
        == "OMPI_COMM_WORLD_RANK=1 needs --scheduler HOST:PORT or TROUPE_SCHEDULER (MPI does not "
           "say where rank 0 runs)");
  CHECK(error_of(flags("", "other:1", 2, 3), ompi("1", "6"))
        == "--scheduler other:1 contradicts TROUPE_SCHEDULER=head:9000");
  CHECK(error_of(flags("", "head:0", 2, 3), without(ompi("0", "6"), "TROUPE_SCHEDULER"))
        == "(no error)");
  CHECK_THAT(error_of(flags("", "head:0", 2, 3), without(ompi("1", "6"), "TROUPE_SCHEDULER")),
             Contains("port 0 (any free port) is for the scheduler only; a server"));

  for (std::string rank : {"-1", "1.0", "one", " 1", "1048576"})
    CHECK(error_of(f, ompi(rank, "6"))
          == "OMPI_COMM_WORLD_RANK=" + rank + " is not a whole number between 0 and 1048575");
  CHECK(error_of(f, ompi("0", "0"))
        == "OMPI_COMM_WORLD_SIZE=0 is not a whole number between 1 and 1048576");
  CHECK(error_of(f, without(ompi("1", "6"), "OMPI_COMM_WORLD_SIZE"))
        == "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");
}

TEST_CASE("MPI: PMI and PMIx ranks, and the order of the families", "[node_identity]") {
  auto f = flags("", "h:1", 2, 3);
  auto id = resolve_node_identity(f, {{"PMI_RANK", "3"}, {"PMI_SIZE", "6"}});
  CHECK(id.role == node_kind::worker);
  CHECK(id.source == "mpi");
  CHECK(error_of(f, {{"PMI_RANK", "3"}}) == "PMI_RANK is set but PMI_SIZE is not");
  CHECK(error_of(f, {{"PMI_RANK", "6"}, {"PMI_SIZE", "6"}})
        == "PMI_RANK=6 is not below PMI_SIZE=6");

  SECTION("PMIx gives no size: both counts are needed, and bound the rank") {
    CHECK(resolve_node_identity(f, {{"PMIX_RANK", "5"}}).role == node_kind::worker);
    CHECK(error_of(f, {{"PMIX_RANK", "6"}})
          == "PMIX_RANK=6 is beyond 1 scheduler + 2 servers + 3 workers");
    CHECK(error_of(flags("", "h:1", 2), {{"PMIX_RANK", "1"}})
          == "PMIX_RANK=1 needs --server-nodes and --worker-nodes (or the config's cluster "
             "counts) to tell its role (PMIX_RANK comes without a size)");
  }
  SECTION("Open MPI before PMI, PMI before PMIx, MPI before Slurm") {
    environment env = {{"OMPI_COMM_WORLD_RANK", "1"},
                       {"OMPI_COMM_WORLD_SIZE", "6"},
                       {"PMI_RANK", "3"},
                       {"PMI_SIZE", "6"},
                       {"PMIX_RANK", "0"},
                       {"SLURM_PROCID", "4"}};
    CHECK(resolve_node_identity(f, env).rank == 1);
    CHECK(resolve_node_identity(f, without(env, "OMPI_COMM_WORLD_RANK")).rank == 3);
    CHECK(resolve_node_identity(f, without(without(env, "OMPI_COMM_WORLD_RANK"), "PMI_RANK")).rank
          == 0);
    id = resolve_node_identity(f, {{"PMIX_RANK", "0"}, {"SLURM_PROCID", "4"}});
    CHECK(id.source == "mpi");
  }
}

TEST_CASE("Slurm places a node on its job's first host", "[node_identity]") {
  auto f = flags("", "", 2, 3);
  auto id = resolve_node_identity(f, slurm("0"));
  CHECK(id.role == node_kind::scheduler);
  CHECK(id.rank == 0);
  CHECK(id.scheduler_host == "gpu07");
  CHECK(id.scheduler_port == 9091);
  CHECK(id.source == "slurm");
  CHECK(resolve_node_identity(f, slurm("2")).role == node_kind::server);
  CHECK(resolve_node_identity(f, slurm("3")).role == node_kind::worker);
  CHECK(resolve_node_identity(flags("", "", 2), slurm("5")).worker_nodes == 3);
  CHECK(error_of(f, slurm("6")) == "SLURM_PROCID=6 is not below SLURM_NTASKS=6");
  CHECK(error_of(flags("scheduler", "", 2, 3), slurm("1"))
        == "--role scheduler contradicts SLURM_PROCID=1, a server among 1 scheduler + 2 servers "
           "+ 3 workers");

  SECTION("the node list: SLURM_JOB_NODELIST, else SLURM_NODELIST") {
    auto env = with(without(slurm("1"), "SLURM_JOB_NODELIST"), "SLURM_NODELIST", "n[3-4]");
    CHECK(resolve_node_identity(f, env).scheduler_host == "n3");
    CHECK(error_of(f, without(env, "SLURM_NODELIST"))
          == "SLURM_PROCID is set but neither SLURM_JOB_NODELIST nor SLURM_NODELIST names the "
             "scheduler's host; give --scheduler HOST:PORT");
    CHECK(
      resolve_node_identity(flags("", "h:5", 2, 3), without(env, "SLURM_NODELIST")).scheduler_host
      == "h");
    CHECK(error_of(f, with(slurm("1"), "SLURM_JOB_NODELIST", "gpu[07-09"))
          == "SLURM_JOB_NODELIST: host list 'gpu[07-09': '[' without its ']'");
  }
  SECTION("the port: --scheduler (its host too), else TROUPE_SCHEDULER_PORT, else 9091") {
    auto env = with(slurm("1"), "TROUPE_SCHEDULER_PORT", "7000");
    CHECK(resolve_node_identity(f, env).scheduler_port == 7000);
    id = resolve_node_identity(flags("", "head:7000", 2, 3), env);
    CHECK(id.scheduler_host == "head");
    CHECK(id.scheduler_port == 7000);
    id = resolve_node_identity(flags("", "head:7001", 2, 3), slurm("1"));
    CHECK(id.scheduler_port == 7001);
    CHECK(error_of(flags("", "head:7001", 2, 3), env)
          == "--scheduler head:7001 contradicts TROUPE_SCHEDULER_PORT=7000");
    CHECK(error_of(f, with(slurm("1"), "TROUPE_SCHEDULER_PORT", "0"))
          == "TROUPE_SCHEDULER_PORT=0 is not a whole number between 1 and 65535");
  }
  SECTION("without SLURM_NTASKS both counts are needed") {
    CHECK(resolve_node_identity(f, without(slurm("5"), "SLURM_NTASKS")).role == node_kind::worker);
    CHECK_THAT(error_of(flags("", "", 2), without(slurm("5"), "SLURM_NTASKS")),
               Contains("SLURM_PROCID=5 needs --server-nodes and --worker-nodes"));
  }
}

TEST_CASE("Slurm host lists expand like Slurm's", "[node_identity]") {
  using list = std::vector<std::string>;
  CHECK(expand_host_list("gpu5") == list{"gpu5"});
  CHECK(expand_host_list("a,b.example.org,c_1") == list{"a", "b.example.org", "c_1"});
  CHECK(expand_host_list("node[01-03,07]") == list{"node01", "node02", "node03", "node07"});
  CHECK(expand_host_list("n[8-10]") == list{"n8", "n9", "n10"});
  CHECK(expand_host_list("n[098-101]") == list{"n098", "n099", "n100", "n101"});
  CHECK(expand_host_list("n[5]-x") == list{"n5-x"});
  CHECK(expand_host_list("[1-2]") == list{"1", "2"});
  CHECK(expand_host_list("rack[1-2]-n[3,5]")
        == list{"rack1-n3", "rack1-n5", "rack2-n3", "rack2-n5"});
  CHECK(expand_host_list("node[01-03,07],gpu5,rack[1-2]-n[3,5]")
        == list{"node01", "node02", "node03", "node07", "gpu5", "rack1-n3", "rack1-n5", "rack2-n3",
                "rack2-n5"});
  CHECK(expand_host_list("r[0-1][0-1][0-1]").size() == 8);
  CHECK(expand_host_list("r[0-1][0-1][0-1]").back() == "r111");
}

TEST_CASE("malformed Slurm host lists are named", "[node_identity]") {
  CHECK(host_list_error("") == "host list '': no hosts");
  CHECK(host_list_error("a,,b") == "host list 'a,,b': empty host name");
  CHECK(host_list_error("a,") == "host list 'a,': empty host name");
  CHECK(host_list_error("n[1-2") == "host list 'n[1-2': '[' without its ']'");
  CHECK(host_list_error("n[1[2]]") == "host list 'n[1[2]]': '[' without its ']'");
  CHECK(host_list_error("n1-2]") == "host list 'n1-2]': unexpected ']'");
  CHECK(host_list_error("n[]") == "host list 'n[]': empty '[]'");
  CHECK(host_list_error("n[3-1]") == "host list 'n[3-1]': range 3-1 runs backwards");
  CHECK(host_list_error("n a") == "host list 'n a': unexpected ' '");
  for (std::string item : {"a", "1-", "-1", "1-2-3", "", "+1"})
    CHECK(host_list_error("n[" + item + ",4]")
          == "host list 'n[" + item + ",4]': '" + item
               + "' is not a whole number between 0 and 999999999");
  CHECK(host_list_error("n[0-999999999]") == "host list 'n[0-999999999]': more than 1048576 hosts");
  CHECK(host_list_error("n[0-1023][0-1023][0-1]")
        == "host list 'n[0-1023][0-1023][0-1]': more than 1048576 hosts");
}

TEST_CASE("current_environment reads this process's variables", "[node_identity]") {
  ::setenv("TROUPE_NODE_IDENTITY_TEST", "a=b", 1);
  auto env = current_environment();
  ::unsetenv("TROUPE_NODE_IDENTITY_TEST");
  CHECK(env["TROUPE_NODE_IDENTITY_TEST"] == "a=b"); // split at the first '=' only
}
