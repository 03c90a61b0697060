#include "apps/status_serving.hpp"

#include <stdexcept>

#include "apps/flags.hpp"
#include <troupe/status/status_json.hpp>

namespace troupe {

status_serving::status_serving(train_command_line& cli, std::ostream& out, bool keep_status) {
  const auto& listen = cli.output.status_listen;
  if (listen.empty() && !keep_status)
    return;
  std::vector<std::pair<std::string, std::string>> run{{"network", cli.job.model.network},
                                                       {"dataset", cli.job.train_data.name}};
  if (!cli.config.path.empty())
    run.emplace_back("config", cli.config.path);
  status_ = std::make_shared<run_status>(std::move(run), cli.job.epochs);
  cli.output.status = status_;
  if (listen.empty())
    return;
  try {
    server_ = std::make_unique<status_server>(status_, parse_listen_address(listen));
  } catch (const std::exception& e) { // the address was checked with the flags: bind failed
    throw usage_error("--status-listen (train.status_listen) " + listen + ": " + e.what());
  }
  out << "Status: " << server_->url() << " (live page; /status, /metrics)" << std::endl;
}

void status_serving::watch(std::shared_ptr<node_events>& events, int pid) {
  if (!status_)
    return;
  if (!events)
    events = std::make_shared<node_events>(nullptr, "scheduler", 0, pid);
  events->observe([status = status_](const std::string& event, const event_fields& fields) {
    status->event(event, fields);
  });
}

std::function<std::string()> status_serving::document() const {
  if (!status_)
    return {};
  return [status = status_] { return status_json(status->snapshot()); };
}

void status_serving::end(const std::string& state, const std::string& failure) {
  if (status_)
    status_->end(state, failure);
}

} // namespace troupe
