// The run's opening lines and configuration record (run_output.hpp). The record and the
// "Resolved:" line are made from one list of values, so they cannot disagree.
#include "apps/run_output.hpp"

#include "apps/integer_text.hpp"

#include <fstream>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include <nlohmann/json.hpp>

#include <troupe/io/atomic_file.hpp>
#include <troupe/io/checkpoint_file.hpp>
#include <troupe/kernels/gradient_codec.hpp>

namespace troupe {

namespace {

struct resolved_value {
  std::string key;
  nlohmann::ordered_json json; ///< the value as the record holds it
  std::string text;            ///< the value as the log shows it
};

// A number as the metrics lines write it (json_number: integral values as integers), so the
// record and the epoch lines that follow it agree.
nlohmann::ordered_json number_json(double x) {
  return nlohmann::ordered_json::parse(json_number(x));
}

// A float as the decimal it was written as (0.03, not 0.029999999329447746): the shortest
// form that reads back to the same float.
double as_written(float x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.7g", static_cast<double>(x));
  return std::strtod(text, nullptr);
}

std::vector<resolved_value> resolved(const training_job& job, int threads) {
  std::vector<resolved_value> v;
  auto number = [&v](const std::string& key, double x) {
    v.push_back({key, number_json(x), json_number(x)});
  };
  auto name = [&v](const std::string& key, const std::string& x) { v.push_back({key, x, x}); };
  const auto& s = job.optimizer.schedule;
  name("network", job.model.network);
  number("num_layers", job.model.num_layers);
  name("dataset", job.train_data.name);
  number("seed", static_cast<double>(job.model.seed));
  number("lr", as_written(s.base_lr));
  name("lr_schedule", to_string(s.policy));
  auto steps_json = nlohmann::ordered_json::array();
  std::string steps_text;
  for (double step : s.step_epochs) {
    steps_json.push_back(number_json(step));
    steps_text += (steps_text.empty() ? "" : ",") + json_number(step);
  }
  v.push_back({"lr_step_epochs", steps_json, steps_text.empty() ? "none" : steps_text});
  number("lr_factor", as_written(s.factor));
  number("warmup_epochs", s.warmup_epochs);
  name("optimizer", optimizer_name(job.optimizer.kind));
  number("momentum", as_written(job.optimizer.sgd.momentum));
  number("wd", as_written(job.optimizer.sgd.weight_decay));
  number("batch_size", static_cast<double>(job.train_batches.batch_size));
  number("epochs", static_cast<double>(job.epochs));
  number("workers", job.topology.workers);
  name("topology", job.topology.name);
  // Each hop's encoding, push chain order ("2bit:fit" for a flag; one per hop when routes say).
  std::string compression;
  for (const auto& hop : job.topology.compression)
    if (hop.active())
      compression += (compression.empty() ? "" : ",") + to_string(hop);
  name("compression", compression.empty() ? "none" : compression);
  number("shards", job.shards);
  number("threads", threads);
  number("top_k", job.top_k);
  v.push_back({"validation", job.validate, job.validate ? "on" : "off"});
  return v;
}

} // namespace

std::string note_lines(const std::vector<std::string>& notes) {
  std::string text;
  for (const auto& note : notes)
    text += "Note: " + note + "\n";
  return text;
}

std::string argument_lines(const std::vector<std::string>& args, const training_job& job,
                           int threads) {
  std::string out = "Arguments:";
  for (const auto& a : args)
    out += " " + a;
  out += "\nResolved:";
  for (const auto& r : resolved(job, threads))
    out += " " + r.key + "=" + r.text;
  return out + "\n";
}

std::string run_record(const std::vector<std::string>& args, const training_job& job, int threads) {
  auto record = nlohmann::ordered_json::object();
  for (const auto& r : resolved(job, threads))
    record[r.key] = r.json;
  record["argv"] = args;
  // Arguments need not be UTF-8 (a Latin-1 file name): bad bytes become U+FFFD, not bad JSON.
  return record.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::int64_t last_epoch_written(const std::string& path) {
  std::ifstream in(path);
  std::int64_t last = -1;
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line, nullptr, false);
    // an epoch's step records come before its own line: only that line says it is written
    if (record.is_object() && record.contains("epoch") && record["epoch"].is_number_integer()
        && record.value("record", "epoch") == "epoch")
      last = std::max(last, record["epoch"].get<std::int64_t>());
  }
  return last;
}

std::shared_ptr<jsonl_writer> open_metrics_file(const std::string& path, const std::string& record,
                                                bool resumed) {
  auto file = std::make_shared<jsonl_writer>(path, resumed);
  const double now =
    std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  file->write({{"time", now}}, {}, {{resumed ? "resumed" : "config", record}});
  return file;
}

int terminal_columns() {
  if (const char* text = std::getenv("COLUMNS")) {
    const auto v = parse_integer(text);
    if (v && *v > 0 && *v < 100000)
      return static_cast<int>(*v);
  }
  winsize size{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    return size.ws_col;
  return 80;
}

void make_parent_folder(const std::string& named, const std::string& path) {
  const auto folder = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (!folder.empty())
    std::filesystem::create_directories(folder, error);
  if (error)
    throw io_error(named + ": cannot create the folder " + folder.string() + ": "
                   + error.message());
}

// `--model-prefix runs/mlp` in a fresh checkout: the folder is made before the run starts (as
// MXNet's fit does), not found missing when the first epoch's checkpoint is written. A folder
// that exists but takes no files (read-only, a file in the way, under /proc) is refused here
// too, by creating the checkpoint's temporary file once, as the metrics file is opened up front.
void check_prefix_folder(const std::string& prefix) {
  if (prefix.empty())
    return;
  make_parent_folder("--model-prefix " + prefix, prefix);
  try {
    check_can_create(checkpoint_path(prefix, 0));
  } catch (const io_error& e) {
    throw io_error("--model-prefix " + prefix + ": " + e.what());
  }
}

std::shared_ptr<timeline_recorder> open_timeline(const std::string& path,
                                                 std::string process_name) {
  if (path.empty())
    return nullptr;
  make_parent_folder("--timeline " + path, path);
  try {
    check_can_create(path);
  } catch (const io_error& e) {
    throw io_error("--timeline " + path + ": " + e.what());
  }
  return std::make_shared<timeline_recorder>(std::move(process_name));
}

int write_timeline(const std::shared_ptr<timeline_recorder>& recorded, const std::string& path,
                   std::ostream& errors) {
  if (!recorded)
    return 0;
  try {
    recorded->write(path);
    return 0;
  } catch (const std::exception& e) {
    errors << ("troupe: error: --timeline " + path + ": " + e.what() + "\n") << std::flush;
    return 1;
  }
}

} // namespace troupe
