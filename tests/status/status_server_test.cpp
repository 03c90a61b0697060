// The status server as a client sees it: a real server on a loopback port the system picks,
// asked by cpp-httplib's client.
#include <catch2/catch.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <troupe/status/status_server.hpp>

using namespace troupe;

namespace {

std::shared_ptr<run_status> trained_status() {
  auto status = std::make_shared<run_status>(
    std::vector<std::pair<std::string, std::string>>{{"network", "mlp"}, {"dataset", "fashion"}},
    4);
  batch_report r;
  r.samples = 32;
  r.correct = 16;
  r.loss_sum = 32;
  r.batches = 10;
  status->batch(r);
  return status;
}

} // namespace

TEST_CASE("parse_listen_address takes PORT, HOST:PORT and [IPV6]:PORT") {
  auto a = parse_listen_address("8080");
  CHECK(a.host == "127.0.0.1");
  CHECK(a.port == 8080);
  a = parse_listen_address("0.0.0.0:9100");
  CHECK(a.host == "0.0.0.0");
  CHECK(a.port == 9100);
  a = parse_listen_address("[::1]:0");
  CHECK(a.host == "::1");
  CHECK(a.port == 0);
}

TEST_CASE("parse_listen_address refuses what names no port or no host, saying what") {
  for (const char* bad : {"", "host:", "http", "70000", "1.2.3.4:-1", "12345678", ":80"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_listen_address(bad), std::invalid_argument);
  }
  CHECK_THROWS_WITH(parse_listen_address("localhost:web"),
                    Catch::Contains("'localhost:web'") && Catch::Contains("the port 'web'"));
  CHECK_THROWS_WITH(parse_listen_address(":80"), Catch::Contains("names no host"));
}

TEST_CASE("status_server serves the page, the status and the metrics") {
  auto status = trained_status();
  status_server server{status, listen_address{"127.0.0.1", 0}};
  REQUIRE(server.port() > 0);
  CHECK(server.url() == "http://127.0.0.1:" + std::to_string(server.port()) + "/");
  httplib::Client client{"127.0.0.1", server.port()};
  auto page = client.Get("/");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->get_header_value("Content-Type").rfind("text/html", 0) == 0);
  CHECK_THAT(page->body, Catch::StartsWith("<!DOCTYPE html>"));
  CHECK_THAT(page->body, Catch::Contains("fetch(\"status\""));
  auto json = client.Get("/status");
  REQUIRE(json);
  CHECK(json->status == 200);
  CHECK(json->get_header_value("Content-Type") == "application/json");
  const auto doc = nlohmann::json::parse(json->body);
  CHECK(doc.at("run").at("network") == "mlp");
  CHECK(doc.at("position").at("step") == 1);
  status->batch([] {
    batch_report r;
    r.index = 1;
    r.batches = 10;
    r.samples = 32;
    return r;
  }());
  // each answer is a fresh snapshot
  CHECK(nlohmann::json::parse(client.Get("/status")->body).at("position").at("step") == 2);
  auto metrics = client.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->status == 200);
  CHECK_THAT(metrics->get_header_value("Content-Type"), Catch::Contains("version=0.0.4"));
  CHECK_THAT(metrics->body, Catch::Contains("\ntroupe_step 2\n"));
}

TEST_CASE("status_server answers 404 for other paths and 405 for other methods") {
  status_server server{trained_status(), listen_address{"127.0.0.1", 0}};
  httplib::Client client{"127.0.0.1", server.port()};
  auto missing = client.Get("/nothing");
  REQUIRE(missing);
  CHECK(missing->status == 404);
  CHECK_THAT(missing->body, Catch::Contains("/status and /metrics"));
  auto posted = client.Post("/status", "x", "text/plain");
  REQUIRE(posted);
  CHECK(posted->status == 405);
  CHECK(posted->get_header_value("Allow") == "GET, HEAD");
}

TEST_CASE("status_server refuses an address it cannot bind, naming it") {
  status_server first{trained_status(), listen_address{"127.0.0.1", 0}};
  const auto port = first.port();
  CHECK_THROWS_WITH((status_server{trained_status(), listen_address{"127.0.0.1", port}}),
                    Catch::Contains("cannot listen on 127.0.0.1:" + std::to_string(port)));
  CHECK_THROWS_WITH((status_server{trained_status(), listen_address{"192.0.2.1", 0}}),
                    Catch::Contains("192.0.2.1"));
}
