// What `troupe train` writes before its first step: the arguments it was given, the resolved
// values a run is told apart by, and the metrics file, opened (and locked) up front.
//
// A run's metrics file starts with one record of its configuration, {"config": {...}} (seed, lr,
// batch size, workers, topology, network, ... as numbers and names), before the epoch records,
// so files of several runs can be told apart and plotted side by side. Writing it at once also
// proves the file takes bytes (a full disk, /dev/full) before any work is done.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <troupe/graph/job.hpp>
#include <troupe/io/metrics_log.hpp>
#include <troupe/io/timeline.hpp>

namespace troupe {

/// "Arguments: --network mlp ..." (the command line as given) and "Resolved: seed=0 lr=0.05
/// ..." (every value the record holds), two lines.
std::string argument_lines(const std::vector<std::string>& args, const training_job& job,
                           int threads);

/// "Note: LINE\n" for each note (train_command_line::notes); empty for none.
std::string note_lines(const std::vector<std::string>& notes);

/// The configuration record's object (without the {"config": ...} around it).
std::string run_record(const std::vector<std::string>& args, const training_job& job, int threads);

/// Opens and locks `path` and writes the configuration record; io_error naming the file and
/// the system's reason when it cannot (another run holds it, no directory, a full disk).
/// `resumed` (a scheduler restarted with --resume): appends, the record as {"resumed": ...}.
/// The last epoch whose line `path` holds (-1: none, or no such file), which a restarted
/// scheduler does not write again (metrics_options::written_through).
std::int64_t last_epoch_written(const std::string& path);
std::shared_ptr<jsonl_writer> open_metrics_file(const std::string& path, const std::string& record,
                                                bool resumed = false);

/// `--model-prefix PREFIX`: makes PREFIX's folder when missing and checks that files can be
/// created in it, before the run starts (troupe train, and the scheduler of a cluster run).
/// Throws io_error naming the prefix and the reason. An empty prefix: nothing to check.
void check_prefix_folder(const std::string& prefix);
/// Makes the folder `path` would be written in, with its parents (as `mkdir -p`); throws
/// io_error "<named>: cannot create the folder F: <reason>".
void make_parent_folder(const std::string& named, const std::string& path);

/// `--timeline FILE`: a timeline of the process `process_name`, once files can be created
/// where FILE goes (io_error naming it otherwise, before the run starts); null for no FILE.
std::shared_ptr<timeline_recorder> open_timeline(const std::string& path, std::string process_name);
/// Writes `recorded` to `path` at the run's end (nothing when null); 0, or 1 after saying on
/// `errors` why it could not be written.
int write_timeline(const std::shared_ptr<timeline_recorder>& recorded, const std::string& path,
                   std::ostream& errors);

/// Columns of the terminal on stdout: COLUMNS when a positive number, else the terminal's
/// own size (TIOCGWINSZ), else 80.
int terminal_columns();

} // namespace troupe
