# Troupe's wire protocol between nodes: one Frame per message, specified in docs/protocol.md
# (who sends each message and what its receiver checks).
#
# On a connection every Frame travels as an 8-byte header (magic "TRPW", then the payload
# length in bytes as a little-endian uint32, a multiple of 8) followed by the payload: the
# Frame in Cap'n Proto's standard (unpacked) serialization, segment table included. Tensor
# values are raw little-endian float32 in Data fields, which Cap'n Proto places on 8-byte
# boundaries, so a receiver can read them where they landed.
@0xfe8720c20d93fb13;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("troupe::wire");

# Raised whenever a Frame's meaning changes; a peer with another version is refused by name.
const protocolVersion :UInt32 = 12;  # 2: requests carry the time left to their deadline; 3: checkpoints; 4: shard backups; 5: rejoin, barrier waits; 6: compressed values; 7: a 2-bit scale per block of 256 values; 8: troupe ctl's commands, drains; 9: shard changes; 10: a rewind names its source; 11: ranks that move alone; 12: a term in every frame, fences

enum Role {
  scheduler @0;
  server @1;
  worker @2;
  ctl @3;  # troupe ctl: an operator's client of the scheduler, admitted with the job's secret
}

# How a Push's or Weights' values are packed (gradient_codec.hpp). The values were quantized
# for the encoding before they were sent, so packing loses nothing.
enum Encoding {
  float32 @0;  # 4 bytes per value, little-endian float32
  fp16 @1;     # 2 bytes per value, IEEE half
  bf16 @2;     # 2 bytes per value, the upper half of a float32
  twoBit @3;   # 4 values per byte, lowest bits first: 0 is 0, 1 is +scale, 2 is -scale (3 is
               # refused), pad bits zero; each block of 256 values of a list (the last
               # may be shorter) has its own scale in `scales`
}

# Why a request failed (troupe::errc across the wire).
enum ErrorCode {
  badRequest @0;
  badData @1;
  peerDown @2;
  timeout @3;
  internal @4;
}

struct Frame {
  version @0 :UInt32;
  body :union {
    hello @1 :Hello;
    proof @2 :Proof;
    push @3 :Push;
    pull @4 :Pull;
    weights @5 :Weights;
    failure @6 :Failure;
    heartbeat @7 :Heartbeat;
    shutdown @8 :Shutdown;
    join @9 :Join;
    assignment @10 :Assignment;
    ready @11 :Ready;
    control @12 :Control;
    report @13 :Report;
    batchReport @14 :BatchReport;
    trafficQuery @15 :TrafficQuery;
    traffic @16 :Traffic;
    checkpoint @17 :Checkpoint;
    checkpointDone @18 :CheckpointDone;
    adopt @19 :Adopt;
    replicate @20 :Push;
    replicated @21 :Replicated;
    promote @22 :Promote;
    leave @23 :Leave;
    release @24 :Release;
    cede @25 :Cede;
    command @26 :Command;
    commandResult @27 :CommandResult;
    drain @28 :Drain;
    change @29 :Change;
    changed @30 :Changed;
    fence @31 :Fence;
  }
  # The sender's term: the number the scheduler's assignment gave its process (Assignment.term),
  # unique in the run; 0 before it has one, and the scheduler's own. A receiver takes nothing
  # from a term the scheduler fenced (a process it declared lost, whose part others run now).
  term @32 :UInt64;
}

# First frame each way on a new connection. The nonce is 32 fresh random bytes.
struct Hello {
  role @0 :Role;
  name @1 :Text;        # "worker 1", for logs
  nonce @2 :Data;
  planHash @3 :UInt64;  # placement_plan::hash of the job this node runs; 0 before it has one
}

# Second frame each way: HMAC-SHA256 of the cluster secret over the direction, both nonces
# and both hellos' roles and plan hashes (docs/protocol.md, "Admission").
struct Proof {
  mac @0 :Data;
}

# Gradients of one step for some keys of one shard (gradient_push).
struct Push {
  request @0 :UInt64;      # answered by the Weights or Failure with the same number
  shard @1 :UInt32;
  step @2 :Int64;
  epochPosition @3 :Float64;
  source @4 :Int32;       # the pusher's index among the route's sources (gradient_push::source)
  samples @5 :Int64;
  keys @6 :List(UInt32);   # indices into the shard's keys, ascending
  values @7 :List(Data);   # one per key: its length's values, packed as `encoding` says
  remainingMs @8 :UInt64;  # the time left to the pusher's deadline (a duration: clocks differ)
  encoding @9 :Encoding;   # a compressed route's pushes; float32 elsewhere
  scales @10 :List(Float32);  # twoBit: one per block of 256 values, key after key (the
                              # threshold, or fitted scales); otherwise empty
}

# The current weights of every key of one shard.
struct Pull {
  request @0 :UInt64;
  shard @1 :UInt32;
  remainingMs @2 :UInt64;  # as Push's
  rewind @3 :Bool;         # the weights as they were before step `beforeStep` (an adopter
                           # recomputing a lost worker's step in flight), not the current ones
  beforeStep @4 :Int64 = -1;  # with rewind: the step; -1: the step in flight at the answerer
  source @5 :Int32;        # with rewind: the asker's index among the route's sources (a shard
                           # answers for that source's step in flight)
}

# A shard's answer to a Push or a Pull (weight_set).
struct Weights {
  request @0 :UInt64;
  shard @1 :UInt32;
  updates @2 :Int64;  # pushes applied (a step is a training step)
  keys @3 :List(UInt32);
  values @4 :List(Data);
  learningRate @5 :Float32;
  beforeStep @6 :Int64 = -1;  # answering a rewinding Pull: the step these weights precede
  encoding @7 :Encoding;      # float32: the weights; otherwise deltas to what the worker holds
  scales @8 :List(Float32);   # twoBit: one per block of 256 values, key after key; otherwise empty
}

# A request that failed; the error travels as a value.
struct Failure {
  request @0 :UInt64;
  code @1 :ErrorCode;
  message @2 :Text;
}

struct Heartbeat {
  sequence @0 :UInt64;
}

# The sender closes the connection after this frame; `reason` says why, for the log.
struct Shutdown {
  reason @0 :Text;
  finished @1 :Bool;  # the run ended as planned (the scheduler, after the final weights)
  lostNode @2 :Int32 = -1;  # the plan node whose loss made the sender stop; -1: none (its own cause)
  fenced @3 :Bool;    # the receiver's term is fenced: it was declared lost, and others run its part
}

# A node asks the scheduler for its place in the run (after admission).
struct Join {
  role @0 :Role;
  host @1 :Text;    # the address peers reach this node at (servers listen there)
  port @2 :UInt16;  # where a server listens (it binds before it joins); 0: a worker
  pid @3 :UInt32;   # for the scheduler's log
  rank @4 :Int32 = -1;  # the rank within its role a launcher gave it (MPI, Slurm, troupe launch); -1: any
  jobHash @5 :UInt64;   # the job its own config resolves to, process counts left out; 0: none
  job @6 :Data;         # that job (as Assignment.job), so a refusal can name the keys that differ; empty: none
  spare @7 :Bool;       # a worker that waits, unassigned, to take over a lost worker's place (launch --spares)
  rejoin @8 :Rejoin;
  sentMicros @9 :Int64;  # the joiner's run clock when it sent this (troupe/io/timeline.hpp); 0: none    # a member of a run in training whose scheduler was lost, joining the scheduler
                        # restarted with --resume; absent: a first join
}

# Where a member stands in the run it kept running while its scheduler was away.
struct Rejoin {
  node @0 :UInt32;             # its plan node (a spare that took a lost worker's place: that node)
  threads @1 :UInt32;          # the compute threads it uses
  epoch @2 :Int64 = -1;        # a worker: the latest epoch any of its computes was asked to train; -1: none
  appliedStep @3 :Int64 = -1;  # a server: the last step its shards applied; -1: none yet
  adopted @4 :List(UInt32);    # lost worker nodes whose computes it runs (on_worker_loss = adopt)
  promoted @5 :List(UInt32);   # lost server nodes whose shards it serves (shard_backups = 1)
  counted @6 :Traffic;         # its answer to the last traffic query (the previous epoch's end), from
                               # which a restarted scheduler counts the epoch's traffic; absent: none
  term @7 :UInt64;             # the term its assignment gave it, which it keeps (0: none)
}

# Where a server node listens.
struct Endpoint {
  node @0 :UInt32;  # index into the plan's nodes
  host @1 :Text;
  port @2 :UInt16;
}

# The facts of the job's datasets every node plans with (graph/placement.hpp data_facts).
struct DataFacts {
  sampleShape @0 :List(Int64);
  classes @1 :Int32;
  trainExamples @2 :Int64;
  validationExamples @3 :Int64;
}

# The scheduler's answer to a Join: the node's rank and plan node, and the resolved job.
struct Assignment {
  rank @0 :UInt32;       # within its role
  node @1 :UInt32;       # index into the plan's nodes
  job @2 :Data;          # the training_job, CAF 0.17 binary serialization (graph/job.hpp inspect)
  jobHash @3 :UInt64;    # job_hash of that job: the receiver recomputes and compares
  planHash @4 :UInt64;   # the plan made from the job and `facts`: the receiver compares its own
  facts @5 :DataFacts;
  servers @6 :List(Endpoint);  # every server node (workers connect to them)
  threads @7 :UInt32;    # compute threads the scheduler was given (flag or config); 0: none, each node picks
  adopt @8 :Bool;        # a spare given a lost worker's node during training: its computes recompute the step in flight
  clock @9 :ClockStamps; # the join's round trip, from which the member reckons its clock's offset
  ranks @10 :List(UInt32); # with adopt: the compute ranks of `node` it runs (empty: all of them)
  term @11 :UInt64;      # the receiver's term, which every frame it sends carries (Frame.term); at least 1
}

# Microseconds on each side's run clock (troupe/io/timeline.hpp): the member's join sent (its
# own stamp, echoed), received at the scheduler, and this assignment sent by the scheduler.
# All 0: not measured (a join that carried no stamp).
struct ClockStamps {
  joinSent @0 :Int64;
  joinReceived @1 :Int64;
  sent @2 :Int64;
}

# A node has spawned its part of the plan (and, a worker, reached every server).
struct Ready {
  node @0 :UInt32;
  port @1 :UInt16;  # where a server now listens for workers (on its join's host); 0: none
  threads @2 :UInt32;  # the compute threads this node uses (a worker: each of its computes)
}

enum ControlKind {
  train @0;
  validate @1;
  endEpoch @2;
}

# The coordinator (on the scheduler) to the compute of rank `rank`: train or validate an epoch
# (answered by a Report), or end an epoch early (no answer).
struct Control {
  request @0 :UInt64;
  rank @1 :UInt32;
  kind @2 :ControlKind;
  epoch @3 :Int64;
  remainingMs @4 :UInt64;  # train, validate: as Push's; endEpoch: 0
}

# A compute actor's phase_report, answering Control `request`.
struct Report {
  request @0 :UInt64;
  epoch @1 :Int64;
  validation @2 :Bool;
  samples @3 :Int64;
  correct @4 :Int64;
  lossSum @5 :Float64;
  seconds @6 :Float64;
  stepSeconds @7 :Float64;
  skipped @8 :Int64;  # bad records the worker's loader left out (skip_bad_records)
  topK @9 :Int32;         # the k of topKCorrect; 0: top-k not counted (the job's top_k)
  topKCorrect @10 :Int64; # samples whose label ranks among the top k logits
}

# A compute actor's batch_report, one way, for the scheduler's metrics.
struct BatchReport {
  rank @0 :Int32;
  epoch @1 :Int64;
  index @2 :Int64;
  batches @3 :Int64;
  samples @4 :Int64;
  correct @5 :Int64;
  lossSum @6 :Float64;
  learningRate @7 :Float32;
  topK @8 :Int32;        # as in Report
  topKCorrect @9 :Int64;
  stepSeconds @10 :Float64; # the step's forward and backward
  waitSeconds @11 :Float64; # since the rank's previous step ended (0 for an epoch's first)
  valuesPushed @12 :Int64;  # gradient values its compressed pushes carried since its last report
  valuesSent @13 :Int64;    # of those, how many went out non-zero (at most valuesPushed)
}

# The scheduler asks a server or worker what it has moved so far (after epoch `epoch`'s
# training); the node answers with Traffic. Both one-way: a late or missing answer only
# leaves that node out of the epoch's traffic figures.
struct TrafficQuery {
  epoch @0 :Int64;
}

# Bytes with one peer, per message kind in Frame's body order (hello first), headers included.
struct PeerTraffic {
  peer @0 :Text;
  bytesIn @1 :List(UInt64);
  bytesOut @2 :List(UInt64);
}

struct Traffic {
  epoch @0 :Int64;
  peers @1 :List(PeerTraffic);
  waits @2 :List(NodeWait);  # what the barriers (aggregators) here waited for, by source node
}

# How long the barriers of a node waited for one source node's contributions, once every other
# source of a step had come: the longest of its barriers (they wait at once), totals since the
# node started.
struct NodeWait {
  node @0 :Text;        # a plan node ("worker_1"), at most a hello name's bytes
  seconds @1 :Float64;  # finite, >= 0
  steps @2 :UInt64;     # steps it came last in
}

enum CheckpointKind {
  save @0;
  restore @1;
}
# The scheduler's checkpoint actor to a server's or worker's part of a cluster checkpoint
# (docs/checkpoints.md): save the node's part after epoch `epoch` to the file `path`, or put
# back the node's share of the checkpoint of epoch `epoch` saved under the prefix `path`.
# Answered by a CheckpointDone or a Failure.
struct Checkpoint {
  request @0 :UInt64;
  kind @1 :CheckpointKind;
  epoch @2 :Int64;
  path @3 :Text;
  remainingMs @4 :UInt64;  # as Push's
}
# A part written (save: its file, size and checksum, as the manifest records them) or a
# restore done (restore: the file empty, bytes 0).
struct CheckpointDone {
  request @0 :UInt64;
  file @1 :Text;
  bytes @2 :UInt64;
  checksum @3 :Text;
}
# The scheduler tells a surviving (or spare) worker to adopt the compute ranks of plan node
# `node`, a worker node that was lost: it spawns that node's loaders and computes beside its
# own and says Ready with `node` once they are served (docs/operations.md, "A lost worker").
struct Adopt {
  node @0 :UInt32;  # index into the plan's nodes: the lost worker node
  ranks @1 :List(UInt32);  # the compute ranks of that node to run (empty: all of them)
}
# A backup shard's answer to a Replicate (a Push its primary applied and passes on, replicas =
# 2): the pushes it has applied, so the primary answers its pushers knowing the backup has it.
struct Replicated {
  request @0 :UInt64;
  updates @1 :Int64;
}
# The scheduler, when server node `node` was lost in a run with shard_backups = 1: the shards of
# `node` are now served by server node `server`, which holds their backups. Sent first to that
# server, which promotes them and says Ready with `node`; then to every worker, which sends
# those shards' pushes there (docs/operations.md, "A lost server").
struct Promote {
  node @0 :UInt32;    # index into the plan's nodes: the lost server node
  server @1 :UInt32;  # the server node holding the backups
}

# A worker asks the scheduler to let it leave the run, its computes moved to other workers
# (drain: its host was asked to end it, SIGTERM). Answered by a Release.
struct Leave {
  reason @0 :Text;  # what asked it to leave ("SIGTERM")
}

# The scheduler's answer to a Leave: granted (the worker ends, exit 0, and its computes are
# adopted once it has gone) or refused, saying why (the worker trains on).
struct Release {
  granted @0 :Bool;
  reason @1 :Text;  # refused: why
}

# The scheduler tells a worker to stop running the computes of worker node `node`, which it
# adopted: another worker (one that joined in training) serves them now.
struct Cede {
  node @0 :UInt32;  # index into the plan's nodes: a worker node the receiver adopted
  ranks @1 :List(UInt32);  # the compute ranks of that node it stops running (empty: all of them)
}

# troupe ctl asks the scheduler to run a verb ("status", "drain") with its arguments. Answered
# by a CommandResult, or a Failure naming why the verb was refused.
struct Command {
  request @0 :UInt64;
  verb @1 :Text;
  args @2 :List(Text);
  remainingMs @3 :UInt64;
}

# What a command did: its answer as text for a person and, where the verb has one, as JSON
# (`status`: the document the status server serves at /status).
struct CommandResult {
  request @0 :UInt64;
  text @1 :Text;
  json @2 :Text;
}

# The scheduler asks a worker to leave (troupe ctl drain): the worker asks to leave as it does
# on SIGTERM, and the scheduler's Release answers it.
struct Drain {
  reason @0 :Text;
}

# What a shard change sets (shard_setting): the schedule's base rate, the momentum,
# the weight decay, the stale-synchronous bound (-1: none).
enum ShardSetting {
  lr @0;
  momentum @1;
  wd @2;
  staleness @3;
}

# The scheduler asks a server to change one optimizer hyper-parameter of every shard it holds
# (its own and the backups of another server's) from training step `step` on (troupe ctl set),
# between two epochs. Answered by a Changed, or a Failure naming the shard that refused.
struct Change {
  request @0 :UInt64;
  setting @1 :ShardSetting;
  value @2 :Float64;
  step @3 :Int64;
  remainingMs @4 :UInt64;  # as Push's
}

# Every shard of the server took the change.
struct Changed {
  request @0 :UInt64;
  shards @1 :UInt32;  # how many shards took it (own and backups)
}

# The scheduler declared the process of term `term` (plan node `node`) lost: sent to every other
# member before anything of its part moves (a promotion, an adoption). Its receiver takes no
# frame of that term again, and ends any channel to it, telling it why (Shutdown.fenced).
struct Fence {
  node @0 :UInt32;   # index into the plan's nodes
  term @1 :UInt64;   # at least 1
  reason @2 :Text;   # why it was declared lost, for the logs
}
