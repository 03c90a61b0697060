// session_host: a program that owns its actor system and embeds one Troupe training session.
// The actor system is the host's (CAF's default settings, not Troupe's local_node_config); the
// metrics sink that prints every report is the host's own typed actor (troupe::metrics_sink_actor);
// and the host's own event-based actor starts the run with a non-blocking request and a
// timeout. Troupe contributes the job description and spawn_training_session, nothing else. The
// job is the small synthetic one of tests/actors/training_session_test.cpp: an MLP on 1x8x8
// inputs, 4 classes, 2 epochs. Exits 0 if the final validation accuracy is well above chance
// (> 0.5 for 4 classes), 1 otherwise or on any error (printed with troupe::error_text).
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/training_session.hpp>
#include <troupe/version.hpp>

namespace {

troupe::training_job small_job() {
  troupe::training_job job;
  job.model.network = "mlp";
  job.train_data.name = "synthetic";
  job.train_data.synthetic_shape = {1, 8, 8};
  job.train_data.synthetic_size = 512;
  job.train_data.synthetic_classes = 4;
  job.validation_data = job.train_data;
  job.validation_data.which = troupe::split::test;
  job.validation_data.synthetic_size = 768; // the test split is a sixth: 128 examples
  job.train_batches.batch_size = 32;
  job.validation_batches.batch_size = 64;
  job.validation_batches.shuffle = false;
  job.optimizer.sgd = troupe::sgd_options{0.9f, 1e-4f, false};
  job.optimizer.schedule.policy = troupe::lr_policy::constant;
  job.optimizer.schedule.base_lr = 0.05f;
  job.epochs = 2;
  return job;
}

double accuracy(const troupe::phase_report& r) {
  return r.samples == 0 ? 0.0 : static_cast<double>(r.correct) / static_cast<double>(r.samples);
}

// The host's metrics sink: the session sends it every training batch and every phase, and
// asks it to flush once at the end of a run.
troupe::metrics_sink_actor::behavior_type printing_sink(troupe::metrics_sink_actor::pointer self) {
  return {
    [=](const troupe::batch_report& b) {
      caf::aout(self) << "  batch  epoch " << b.epoch << " [" << b.index + 1 << "/" << b.batches
                      << "] loss " << b.loss_sum / static_cast<double>(b.samples) << "\n";
    },
    [=](const troupe::phase_report& p) {
      caf::aout(self) << "  phase  epoch " << p.epoch
                      << (p.validation ? " validation" : " training") << " accuracy " << accuracy(p)
                      << " (" << p.samples << " samples, " << p.seconds << " s)\n";
    },
    [=](troupe::flush_atom) { return true; },
  };
}

// The host's own actor: asks the session to run, and reacts to the answer when it comes. No
// thread waits meanwhile. It ends the session and the sink, then itself.
caf::behavior host(caf::event_based_actor* self, troupe::training_session_actor session,
                   troupe::metrics_sink_actor sink, std::shared_ptr<int> exit_code) {
  auto finish = [=](int code) {
    *exit_code = code;
    self->send_exit(session, caf::exit_reason::user_shutdown);
    self->send_exit(sink, caf::exit_reason::user_shutdown);
    self->quit();
  };
  self->request(session, std::chrono::minutes(10), troupe::run_atom::value)
    .then(
      [=](troupe::training_result& result) {
        const troupe::phase_report* last = nullptr;
        for (const auto& p : result.phases)
          if (p.validation)
            last = &p;
        double acc = last ? accuracy(*last) : 0.0;
        caf::aout(self) << "final validation accuracy " << acc << " (chance 0.25), "
                        << result.final_weights.size() << " parameters returned\n";
        finish(acc > 0.5 ? 0 : 1);
      },
      [=](caf::error& err) {
        caf::aout(self) << "training failed: " << troupe::error_text(err) << "\n";
        finish(1);
      });
  return {}; // everything happens in the response handlers above
}

} // namespace

int main() {
  std::cout << "session_host: compiled against Troupe " << TROUPE_VERSION_STRING << "\n";
  caf::actor_system_config config;    // CAF's defaults: the host's scheduler, not Troupe's
  troupe::add_error_category(config); // optional: the system renders troupe errors
  caf::actor_system system{config};

  auto exit_code = std::make_shared<int>(1);
  auto sink = system.spawn(printing_sink);
  troupe::session_sinks sinks;
  sinks.metrics = sink;
  try {
    auto session = troupe::spawn_training_session(system, small_job(), sinks);
    system.spawn(host, session, sink, exit_code);
  } catch (const std::exception& e) { // a job check_job refuses
    std::cerr << "session_host: " << e.what() << "\n";
    caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
    return 1;
  }
  system.await_all_actors_done();
  return *exit_code;
}
