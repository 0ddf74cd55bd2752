//! The bugs the simulation found, as scripted scenarios (robust to changes of the random
//! schedule): each runs with one behaviour as the server has it (`*_as_built`, ignored: it
//! fails today) and with the fix the simulation's CI model uses (`*_fixed`, must pass and
//! converge). When the server is fixed, set the field of `Model::AS_BUILT` to `false` and
//! drop the `#[ignore]`. The invariants are checked after every event, as in the random runs.

use rand::SeedableRng;
use rand::rngs::StdRng;
use skiff_replication::Role;

use crate::check::History;
use crate::world::{Cfg, Model, World};
use crate::{FIXED, heal};

fn world(model: Model, durable: bool, lossy: bool) -> World {
    world_min_isr(model, durable, lossy, 1)
}

fn world_min_isr(model: Model, durable: bool, lossy: bool, min_isr: i32) -> World {
    let cfg = Cfg {
        durable,
        min_isr,
        lossy,
        lag_ms: 10_000,
        model,
        mix: [1; 8],
        drop_one_in: 0,
    };
    World::new(StdRng::seed_from_u64(0), cfg).expect("a new world")
}

/// Runs `f`, then the invariants.
fn ck(w: &mut World, f: impl FnOnce(&mut World) -> Result<(), String>) -> Result<(), String> {
    f(w)?;
    History::check(w)
}

fn replay(name: &str, scenario: fn(Model) -> Result<(), String>, model: Model) {
    if let Err(e) = scenario(model) {
        panic!("{name}: {e}");
    }
}

/// Replicas 2 and 3 stop and are fenced: the ISR is {1}; 2 comes back, catches up, and
/// replica 1 proposes {1, 2}: the AlterPartition is delivered (committed), its answer not.
fn expansion_in_flight(w: &mut World) -> Result<(), String> {
    w.nodes[1].paused = true;
    w.nodes[2].paused = true;
    ck(w, |w| w.pass_time(9_500))?;
    ck(w, |w| w.apply_metadata(0, true))?;
    w.nodes[1].paused = false;
    ck(w, |w| w.pass_time(100))?; // 2 heartbeats: unfenced
    ck(w, |w| w.apply_metadata(0, true))?;
    ck(w, |w| w.apply_metadata(1, true))?;
    w.send_fetch(1);
    ck(w, |w| w.deliver(2, 1).map(drop))?; // 1 answers and proposes {1, 2}
    ck(w, |w| w.deliver(1, 0).map(drop))?; // the controller commits it
    if w.ctl.latest().isr != [1, 2] {
        return Err(format!("scenario: no expansion: {:?}", w.ctl.latest()));
    }
    Ok(())
}

/// Bug 1 (crash-stop only, nothing lost on disk): `ReplicaManager::open` takes roles from
/// the last image the broker applied and serves at once. Replica 1 learned ISR {1, 2} from
/// an AlterPartition answer, not from its image (ISR {1}); it is killed, fenced, 2 leads
/// epoch 1; restarted within seconds, 1 leads epoch 0 again with ISR {1} and acknowledges
/// an acks=all write alone, which 2 never has.
fn restarted_leader_acks_alone(model: Model) -> Result<(), String> {
    let mut w = world(model, false, false);
    expansion_in_flight(&mut w)?;
    ck(&mut w, |w| w.deliver(0, 1).map(drop))?; // 1 learns {1, 2} from the answer
    ck(&mut w, |w| {
        w.crash(0);
        Ok(())
    })?;
    ck(&mut w, |w| w.pass_time(9_500))?; // 1 fenced: 2 leads epoch 1
    ck(&mut w, |w| w.apply_metadata(1, true))?;
    ck(&mut w, |w| w.restart(0))?;
    ck(&mut w, |w| w.produce(0, 1))?;
    heal(&mut w)
}

#[test]
#[ignore = "bug 1, fixed in the server (ReplicaManager::open_gated: no role until registered again and unfenced): this models the code before the fix"]
fn restarted_leader_acks_alone_as_built() {
    let model = Model {
        restart_serves_at_once: true,
        ..FIXED
    };
    replay("bug 1", restarted_leader_acks_alone, model);
}

#[test]
fn restarted_leader_acks_alone_fixed() {
    replay("bug 1 fixed", restarted_leader_acks_alone, FIXED);
}

/// Bug 1 again, with a power loss: replica 1 loses its unsynced records of epoch 0, which 2
/// and 3 fetched (not committed yet); restarted at once, it leads epoch 0 again and writes
/// other records at the same offsets and epoch, a divergence the followers' epoch check
/// cannot see (their next fetch, offset 2 with last epoch 0, is answered with records).
fn restarted_leader_rewrites_its_epoch(model: Model) -> Result<(), String> {
    let mut w = world(model, false, true);
    ck(&mut w, |w| w.produce(0, 2))?;
    ck(&mut w, |w| w.fetch_rounds(1))?;
    ck(&mut w, |w| {
        w.crash_keeping(0, 0);
        Ok(())
    })?;
    ck(&mut w, |w| w.restart(0))?;
    ck(&mut w, |w| w.produce(0, 1))?;
    heal(&mut w)
}

#[test]
#[ignore = "bug 1, fixed in the server (ReplicaManager::open_gated: no role until registered again and unfenced): this models the code before the fix"]
fn restarted_leader_rewrites_its_epoch_as_built() {
    let model = Model {
        restart_serves_at_once: true,
        ..FIXED
    };
    replay(
        "bug 1 (power loss)",
        restarted_leader_rewrites_its_epoch,
        model,
    );
}

#[test]
fn restarted_leader_rewrites_its_epoch_fixed() {
    replay("bug 1 fixed", restarted_leader_rewrites_its_epoch, FIXED);
}

/// Bug 2 (crash-stop only): the answer to a committed ISR expansion {1} -> {1, 2} is lost;
/// after the timeout `isr.rs` calls `on_isr_proposal_failed` and the core drops 2 from its
/// maximal ISR. Replica 1, cut from the controller (fenced: 2 leads epoch 1) and from 2,
/// then acknowledges an acks=all write alone: 2, the new leader, never has it.
fn lost_expansion_answer(model: Model) -> Result<(), String> {
    let mut w = world(model, false, false);
    expansion_in_flight(&mut w)?;
    w.cut_link(0, 1); // the answer is lost
    w.cut_link(1, 2);
    ck(&mut w, |w| w.pass_time(10_500))?; // 1's AlterPartition times out; 1 fenced
    ck(&mut w, |w| w.apply_metadata(1, true))?;
    if w.nodes[1].part.role() != Role::Leader {
        return Err("scenario: 2 does not lead".into());
    }
    ck(&mut w, |w| w.produce(0, 1))?;
    heal(&mut w)
}

#[test]
#[ignore = "bug 2, fixed in isr.rs (an unknown outcome resends the proposal; only INELIGIBLE_REPLICA / OPERATION_NOT_ATTEMPTED drop it): this models the code before the fix"]
fn lost_expansion_answer_as_built() {
    let model = Model {
        failed_proposal_resets_isr: true,
        ..FIXED
    };
    replay("bug 2", lost_expansion_answer, model);
}

#[test]
fn lost_expansion_answer_fixed() {
    replay("bug 2 fixed", lost_expansion_answer, FIXED);
}

/// Bug 3 (durable topic): leader 1 wrote two records of epoch 0, not fsynced yet, and is cut
/// off; 2 leads epoch 1 and commits two other records at offsets 0 and 1. Back as a
/// follower, 1 fetches from its synced end (0) with last epoch 0: no divergence at offset 0,
/// and `append_fetched` skips the leader's batches below its log end, so it keeps its own.
fn durable_follower_keeps_unsynced_tail(model: Model) -> Result<(), String> {
    let mut w = world(model, true, false);
    ck(&mut w, |w| w.produce(0, 2))?;
    for other in [0, 2, 3] {
        w.cut_link(1, other);
    }
    ck(&mut w, |w| w.pass_time(9_500))?; // 1 fenced: 2 leads epoch 1
    ck(&mut w, |w| w.apply_metadata(1, true))?;
    ck(&mut w, |w| w.apply_metadata(2, true))?;
    ck(&mut w, |w| w.produce(1, 2))?;
    ck(&mut w, |w| w.fsync(1, true))?;
    ck(&mut w, |w| w.fetch_rounds(2))?;
    w.cut.clear();
    ck(&mut w, |w| w.apply_metadata(0, true))?;
    ck(&mut w, |w| w.fetch_rounds(3))?;
    heal(&mut w)
}

#[test]
#[ignore = "bug 3, fixed in follow.rs (follower_position fsyncs to the log end): this models the code before the fix"]
fn durable_follower_keeps_unsynced_tail_as_built() {
    let model = Model {
        durable_fetch_from_synced_end: true,
        ..FIXED
    };
    replay("bug 3", durable_follower_keeps_unsynced_tail, model);
}

#[test]
fn durable_follower_keeps_unsynced_tail_fixed() {
    replay("bug 3 fixed", durable_follower_keeps_unsynced_tail, FIXED);
}

/// Bug 4 (liveness): 2 becomes leader of epoch 1 (its epoch cache gets (1, 2)) and stops
/// before writing; 3 leads epoch 2. Back as a follower, 2 fetches with last epoch 1; 3
/// answers `DivergingEpoch(0, 2)`; the truncation target (2) is 2's log end, so
/// `truncate_locked` does nothing and the empty epoch 1 stays: the same answer forever, 2
/// never rejoins the ISR.
fn empty_epoch_livelock(model: Model) -> Result<(), String> {
    let mut w = world(model, false, false);
    ck(&mut w, |w| w.produce(0, 2))?;
    ck(&mut w, |w| w.fetch_rounds(3))?;
    w.nodes[0].paused = true;
    ck(&mut w, |w| w.pass_time(9_500))?; // 1 fenced: 2 leads epoch 1
    ck(&mut w, |w| w.apply_metadata(1, true))?;
    ck(&mut w, |w| w.apply_metadata(2, true))?;
    w.nodes[1].paused = true;
    w.nodes[0].paused = false;
    ck(&mut w, |w| w.pass_time(9_500))?; // 2 fenced: 3 leads epoch 2
    ck(&mut w, |w| w.apply_metadata(2, true))?;
    w.nodes[1].paused = false;
    heal(&mut w)
}

#[test]
#[ignore = "bug 4, fixed in follow.rs and storage (a truncation to the log end drops an empty epoch): this models the code before the fix"]
fn empty_epoch_livelock_as_built() {
    let model = Model {
        noop_truncation_keeps_epoch: true,
        ..FIXED
    };
    replay("bug 4", empty_epoch_livelock, model);
}

#[test]
fn empty_epoch_livelock_fixed() {
    replay("bug 4 fixed", empty_epoch_livelock, FIXED);
}

/// Bug 5 (crash-stop only): replica 1, cut from its peers, proposes ISR {1} (committed, the
/// answer delayed) and applies it from its image first; 2 catches up and 1 proposes {1, 2}.
/// Then the late answer to the shrink, `Ok((1, [1]))`, reaches `on_isr_committed`, which
/// takes a partition epoch equal to its own and clears the expansion in flight: 1's HW
/// moves without 2 and acknowledges a write 2 lacks; the controller adds 2 to the ISR and
/// elects it when 1 dies.
fn late_answer_drops_expansion(model: Model) -> Result<(), String> {
    let mut w = world(model, false, false);
    w.cut_link(1, 2);
    w.cut_link(1, 3);
    ck(&mut w, |w| w.pass_time(10_500))?; // 1 proposes {1}
    ck(&mut w, |w| w.deliver(1, 0).map(drop))?; // committed; the answer waits
    ck(&mut w, |w| w.apply_metadata(0, true))?;
    w.heal_link(1, 2);
    w.send_fetch(1);
    ck(&mut w, |w| w.deliver(2, 1).map(drop))?; // 1 proposes {1, 2}
    ck(&mut w, |w| w.deliver(0, 1).map(drop))?; // the late answer to {1}
    w.cut_link(1, 2);
    ck(&mut w, |w| w.pass_time(10_500))?; // 2 is not caught up any more
    ck(&mut w, |w| w.produce(0, 1))?;
    ck(&mut w, |w| w.deliver(1, 0).map(drop))?; // {1, 2} committed
    ck(&mut w, |w| {
        w.crash(0);
        Ok(())
    })?;
    ck(&mut w, |w| w.pass_time(9_500))?; // 1 fenced: 2 leads epoch 1
    ck(&mut w, |w| w.apply_metadata(1, true))?;
    heal(&mut w)
}

#[test]
// Bug 5 (a late AlterPartition answer cleared a newer proposal) is fixed in the core
// (`Partition::on_isr_committed` ignores a registration not newer than its own): a regression test.
fn late_answer_drops_expansion_as_built() {
    let model = Model {
        late_answer_settles_proposal: true,
        ..FIXED
    };
    replay("bug 5", late_answer_drops_expansion, model);
}

#[test]
fn late_answer_drops_expansion_fixed() {
    replay("bug 5 fixed", late_answer_drops_expansion, FIXED);
}

/// Bug 6 (minor; only after a lost committed entry): all three commit two records and 2
/// checkpoints HW 2; 2 and 3 stop, 1 alone in the ISR loses both records in a power loss,
/// leads epoch 2, and 3 rejoins. Cut from 3 (min ISR 2: nothing commits), 1 writes two
/// other records; 2 comes back, truncates its two (lost anyway), fetches the new ones, and
/// is killed before its next HW checkpoint: restarted, its HW is the stale checkpoint, 2,
/// over records nobody committed.
fn stale_checkpoint_after_truncation(model: Model) -> Result<(), String> {
    let mut w = world_min_isr(model, false, true, 2);
    ck(&mut w, |w| w.produce(0, 2))?;
    ck(&mut w, |w| w.fetch_rounds(3))?;
    w.nodes[1].log.checkpoint_hw = w.nodes[1].log.hw;
    w.nodes[1].paused = true;
    w.nodes[2].paused = true;
    ck(&mut w, |w| w.pass_time(9_500))?; // 2 and 3 fenced: ISR {1}
    ck(&mut w, |w| {
        w.crash_keeping(0, 0);
        w.restart(0)
    })?;
    ck(&mut w, |w| w.pass_time(9_500))?; // 1's old session expires: leaderless
    ck(&mut w, |w| w.pass_time(100))?; // 1 registers again
    ck(&mut w, |w| w.apply_metadata(0, true))?;
    ck(&mut w, |w| w.pass_time(100))?; // 1 unfenced: leads epoch 2
    ck(&mut w, |w| w.apply_metadata(0, true))?;
    w.nodes[2].paused = false;
    ck(&mut w, |w| w.pass_time(100))?; // 3 unfenced
    ck(&mut w, |w| w.apply_metadata(0, true))?;
    ck(&mut w, |w| w.apply_metadata(2, true))?;
    ck(&mut w, |w| w.fetch_rounds(2))?; // 3 truncates, catches up, joins the ISR
    w.cut_link(1, 3);
    ck(&mut w, |w| w.produce(0, 2))?;
    w.nodes[1].paused = false;
    ck(&mut w, |w| w.pass_time(100))?; // 2 unfenced
    ck(&mut w, |w| w.apply_metadata(1, true))?;
    ck(&mut w, |w| w.fetch_rounds(2))?; // 2 truncates, then fetches epoch 2's records
    ck(&mut w, |w| {
        let leo = w.nodes[1].log.leo();
        w.crash_keeping(1, leo);
        w.restart(1)
    })?;
    ck(&mut w, |w| w.pass_time(9_500))?;
    ck(&mut w, |w| w.pass_time(100))?; // 2 registers again
    ck(&mut w, |w| w.apply_metadata(1, true))?; // and takes its role: HW 2
    heal(&mut w)
}

#[test]
#[ignore = "bug 6, fixed in the server (a fetcher writes the checkpoints after a truncation lowered a HW, ReplicaManager::checkpoint_if_hw_lowered): this models the code before the fix"]
fn stale_checkpoint_after_truncation_as_built() {
    let model = Model {
        truncation_keeps_checkpointed_hw: true,
        ..FIXED
    };
    replay("bug 6", stale_checkpoint_after_truncation, model);
}

#[test]
fn stale_checkpoint_after_truncation_fixed() {
    replay("bug 6 fixed", stale_checkpoint_after_truncation, FIXED);
}
