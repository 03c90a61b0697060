// The metrics actor's batch side (metrics_state.hpp): each training batch's report feeds the
// speedometer window (MXNet's Speedometer line), the progress bar (speed, ETA, running loss) and,
// with metrics_every, a step record.
#include <cstdio>
#include <iostream>

#include "actors/metrics_state.hpp"

namespace troupe {

std::string format(const char* fmt, double a, double b, double c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

void clear_bar(metrics_state& st) {
  if (st.bar_drawn) {
    *st.options.out << "\r\033[K";
    st.bar_drawn = false;
  }
}

namespace {

// The bar's figures for report `r` (running_figures.hpp).
std::string bar_figures(const metrics_state& st, const batch_report& r) {
  const double seconds = std::chrono::duration<double>(clock_type::now() - st.epoch_start).count();
  return bar_figures(st.since_epoch, seconds, r.index, r.batches);
}

// The bar's line is "Epoch[e] [===>   ] i/n 1234/s ETA 0:42 loss 0.5321": the bar takes
// what the counters leave of the terminal's width, at most 30 columns, and the line stays one
// column short of the width so a terminal never wraps it (a wrapped line would not be redrawn by
// '\r').
void draw_bar(metrics_state& st, const batch_report& r) {
  const auto total = std::max<std::int64_t>(1, r.batches);
  const std::string head = "Epoch[" + std::to_string(r.epoch) + "] [";
  const std::string tail = "] " + std::to_string(r.index + 1) + "/" + std::to_string(r.batches);
  const int room = st.options.terminal_columns - 1 - static_cast<int>(head.size() + tail.size());
  const int width = std::min(30, room);
  if (width < 2) { // too narrow for a bar: the counters alone, if they fit
    const auto counters = tail.substr(2);
    if (static_cast<int>(counters.size()) < st.options.terminal_columns) {
      *st.options.out << "\r\033[K" << counters << std::flush;
      st.bar_drawn = true;
    }
    return;
  }
  const int filled = static_cast<int>(width * (r.index + 1) / total);
  std::string bar(filled, '=');
  if (filled < width)
    bar += '>' + std::string(width - filled - 1, ' ');
  // the figures where the bar leaves room for them; the line's end cleared, as they shorten
  auto figures = bar_figures(st, r);
  if (static_cast<int>(figures.size()) >= room - width)
    figures.clear();
  *st.options.out << "\r" << head << bar << tail << figures << "\033[K" << std::flush;
  st.bar_drawn = true;
}

void count_in_window(metrics_state& st, const batch_report& r) {
  st.window_samples += r.samples;
  st.window_correct += r.correct;
  st.window_top_k_correct += r.top_k_correct;
}

// A step record's times by rank, and by node in a cluster.
std::vector<std::pair<std::string, std::string>> step_record_times(const metrics_state& st,
                                                                   const running_figures& w) {
  std::vector<std::pair<std::string, std::string>> times{{"ranks", rank_times_json(w)}};
  if (!st.options.rank_nodes.empty())
    times.emplace_back("nodes", node_times_json(w, st.options.rank_nodes));
  return times;
}

// Every `step_records` of rank 0's batches, the steps since the last record (every rank's
// samples): their mean loss and accuracy, speed, and where the run is.
void write_step_line(metrics_state& st, const batch_report& r, clock_type::time_point now) {
  const auto every = st.options.step_records;
  if (st.step_start == clock_type::time_point{})
    st.step_start = now; // the first report opens the first record's window
  if (!st.jsonl || every <= 0 || (r.index + 1) % every != 0
      || r.epoch <= st.options.written_through)
    return;
  const auto& w = st.since_step;
  const double seconds = std::chrono::duration<double>(now - st.step_start).count();
  const double samples = static_cast<double>(std::max<std::int64_t>(w.samples, 1));
  const auto batches = std::max<std::int64_t>(r.batches, 1);
  st.jsonl->write(
    {{"step", static_cast<double>(r.epoch * batches + r.index + 1)},
     {"epoch", static_cast<double>(r.epoch)},
     {"epoch_progress", static_cast<double>(r.epoch)
                          + static_cast<double>(r.index + 1) / static_cast<double>(batches)},
     {"time", unix_seconds()},
     {"loss", w.loss_sum / samples},
     {"accuracy", static_cast<double>(w.correct) / samples},
     {"learning_rate", r.learning_rate},
     {"samples_per_s", seconds > 0 ? static_cast<double>(w.samples) / seconds : 0.0}},
    {{"record", "step"}}, step_record_times(st, w));
  st.since_step = {};
  st.step_start = now;
}

} // namespace

// With several workers every worker reports; worker 0's reports pace the window and the
// lines, the others' samples count towards the speed and accuracy.
void on_batch(metrics_state& st, const batch_report& r) {
  auto now = clock_type::now();
  if (st.options.status)
    st.options.status->batch(r);
  st.learning_rate = r.learning_rate;
  if (st.options.position && r.rank == 0) {
    st.options.position->epoch = r.epoch;
    st.options.position->batch = r.index;
    st.options.position->batches = r.batches;
    st.options.position->validating = false;
  }
  if (r.rank == 0 && r.index == 0) {
    st.since_epoch = {};
    st.epoch_start = now;
  }
  st.since_epoch.add(r);
  st.since_step.add(r);
  if (r.values_pushed > 0) {
    auto& p = st.pushed[r.epoch];
    p.values += r.values_pushed;
    p.sent += r.values_sent;
  }
  if (r.rank != 0) {
    count_in_window(st, r);
    return;
  }
  write_step_line(st, r, now);
  if (r.index == 0)
    record_event(st.options.events, "training",
                 {{{"epoch", r.epoch}, {"batches", static_cast<double>(r.batches)}}, {}});
  if (r.index == 0 || st.window_batches == 0) {
    // The first batch of an epoch opens the window; its own time is not measured.
    st.window_start = now;
    st.window_samples = st.window_correct = st.window_top_k_correct = st.window_batches = 0;
    if (r.index == 0) {
      st.window_batches = 1;
      return;
    }
  }
  count_in_window(st, r);
  ++st.window_batches;
  const auto shown = st.options.display_batches;
  if (shown > 0 && (r.index + 1) % shown == 0)
    record_event(st.options.events, "batch",
                 {{{"epoch", r.epoch}, {"batch", static_cast<double>(r.index + 1)}}, {}});
  if (shown > 0 && (r.index + 1) % shown == 0 && st.window_samples > 0) {
    double seconds = std::chrono::duration<double>(now - st.window_start).count();
    clear_bar(st);
    *st.options.out << "Epoch[" << r.epoch << "] Batch [" << (r.index + 1)
                    << "]\tSpeed: " << format("%.2f", st.window_samples / std::max(seconds, 1e-9))
                    << " samples/sec\taccuracy="
                    << format("%.6f", double(st.window_correct) / st.window_samples);
    if (r.top_k > 0) // as MXNet's Speedometer prints every metric: NAME=VALUE
      *st.options.out << "\ttop_k_accuracy_" << r.top_k << '='
                      << format("%.6f", double(st.window_top_k_correct) / st.window_samples);
    // Flushed now, not at the epoch's end: a pipe (troupe launch's relay, tee, a log
    // collector, scripts/chaos.py finding its moments) sees the line when the batch is done.
    *st.options.out << '\n' << std::flush;
    st.window_start = now;
    st.window_samples = st.window_correct = st.window_top_k_correct = 0;
  }
  if (st.options.progress_bar)
    draw_bar(st, r);
}

} // namespace troupe
