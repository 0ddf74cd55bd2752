//! The four producers of the leader-kill scenario (issue 17) and its exactly-once check.
//!
//! Mental model: every client produces the values "0", "1", ... to partition 0 of its own
//! topic, idempotent with acks=all, until told to stop, and keeps every acknowledgement it got
//! (offset, value). Three are scripts under `tests/compat/py/` run in the background
//! (`produce_continuously` of `ck.py` under PyPI's and under Debian's interpreter, of `kp.py`
//! for kafka-python), reporting `{acked, sent, failed}` lines on stderr; the fourth is the
//! `rdkafka` crate on a thread of the test, counting acknowledgements in an atomic. All four
//! end in the same [`Outcome`], which [`check_exactly_once`] compares with what an
//! independent reader (the `rdkafka` crate's consumer, [`read_all`]) finds in the topic.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::{Value, json};
use skiff_compat::{Background, Python, finish_json, python_background};

/// librdkafka settings of the three librdkafka-based producers: idempotent, acks=all, quick
/// to notice a dead leader and to find the new one.
const LIBRDKAFKA: &[(&str, &str)] = &[
    ("enable.idempotence", "true"),
    ("acks", "all"),
    ("message.timeout.ms", "60000"),
    ("request.timeout.ms", "5000"),
    ("retry.backoff.ms", "50"),
    ("reconnect.backoff.ms", "50"),
    ("reconnect.backoff.max.ms", "500"),
    ("topic.metadata.refresh.interval.ms", "1000"),
    ("linger.ms", "5"),
];

/// What a producer ended with.
#[derive(Debug)]
pub struct Outcome {
    /// Records handed to the client.
    pub sent: i64,
    /// (offset, value) of every acknowledged record, in acknowledgement order (offset -1: the
    /// delivery report carried none).
    pub acks: Vec<(i64, i64)>,
    /// "value: error" of every record the client gave up on.
    pub failures: Vec<String>,
    /// Records neither acknowledged nor failed when the client's flush returned.
    pub unflushed: i64,
    /// Records librdkafka acknowledged implicitly, as its "eos" debug log reported them
    /// (IMPLICITACK): a request that failed with an unknown outcome (a timeout, a connection
    /// lost with the killed leader) was followed by a later request of the same producer and
    /// partition that succeeded, which proves the first was persisted, so librdkafka delivers
    /// its records without an offset (`rd_kafka_dr_implicit_ack`). Such acks are allowed, and
    /// only so many; every other ack must carry its offset.
    pub implicit: i64,
    /// The first few IMPLICITACK log lines, for the failure message.
    pub implicit_lines: Vec<String>,
}

/// One of the four producers, running.
pub struct Client {
    /// The client's name, in every assertion message.
    pub name: &'static str,
    pub topic: String,
    /// The latest acknowledged count seen.
    pub acked: i64,
    run: Run,
}

enum Run {
    Script(Background),
    Rust {
        shared: Arc<Shared>,
        stop: Arc<AtomicBool>,
        thread: JoinHandle<Outcome>,
    },
}

/// The four clients, each on its own topic (`topic_of(i)` for the i-th).
pub fn start_all(bootstrap: &str, topic_of: impl Fn(usize) -> String) -> Vec<Client> {
    let ck: serde_json::Map<String, Value> = LIBRDKAFKA
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    let kp = json!({
        "enable_idempotence": true, "acks": "all", "delivery_timeout_ms": 60_000,
        "request_timeout_ms": 5_000, "retry_backoff_ms": 50, "reconnect_backoff_ms": 50,
        "reconnect_backoff_max_ms": 500, "metadata_max_age_ms": 1_000, "linger_ms": 5,
    });
    let script = |py, file, config: &Value, topic: &str| {
        Run::Script(python_background(
            py,
            file,
            "produce_continuously",
            &json!({"bootstrap": bootstrap, "topic": topic, "partitions": 1, "config": config}),
        ))
    };
    let ck = Value::Object(ck);
    let names = [
        "confluent-kafka (PyPI)",
        "confluent-kafka (Debian)",
        "kafka-python (PyPI)",
        "rdkafka crate",
    ];
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let topic = topic_of(i);
            let run = match i {
                0 => script(Python::PyPi, "ck.py", &ck, &topic),
                1 => script(Python::Debian, "ck.py", &ck, &topic),
                2 => script(Python::PyPi, "kp.py", &kp, &topic),
                _ => rust_producer(bootstrap, &topic),
            };
            Client {
                name,
                topic,
                acked: 0,
                run,
            }
        })
        .collect()
}

impl Client {
    /// Waits (at most `within`) until the client has acknowledged `more` records after this
    /// call began (not merely more than the last count seen: the scripts' progress lines are
    /// queued, so the first line read may predate a kill); the new count.
    pub fn wait_acked(&mut self, more: i64, within: Duration) -> i64 {
        let name = self.name;
        self.acked = match &mut self.run {
            Run::Script(bg) => {
                let since = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64());
                let progress = |line: &str| {
                    let v: Value = serde_json::from_str(line).ok()?;
                    Some((v["acked"].as_i64()?, v["t"].as_f64()?))
                };
                // The first count reported after `since`, then `more` beyond it.
                named(name, || {
                    let base = bg.wait_for(within, |l| {
                        progress(l).and_then(|(acked, t)| (t >= since).then_some(acked))
                    });
                    bg.wait_for(within, |l| {
                        progress(l).and_then(|(acked, _)| (acked >= base + more).then_some(acked))
                    })
                })
            }
            Run::Rust { shared, thread, .. } => {
                let until = Instant::now() + within;
                let at_least = shared.acked.load(Ordering::SeqCst) + more;
                loop {
                    let acked = shared.acked.load(Ordering::SeqCst);
                    if acked >= at_least {
                        break acked;
                    }
                    let failures = shared.failures.lock().unwrap();
                    assert!(
                        Instant::now() < until && !thread.is_finished(),
                        "{name}: {acked} acknowledged, not {at_least}, within {within:?}; failures: {failures:?}"
                    );
                    drop(failures);
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        };
        self.acked
    }

    /// Stops the client, waits for its flush, and returns what it ended with.
    pub fn finish(self, within: Duration) -> Outcome {
        let name = self.name;
        match self.run {
            Run::Script(bg) => {
                let r = named(name, || finish_json(bg, within));
                let acks = r["acks"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{name}: no acks in its result"))
                    .iter()
                    // confluent-kafka reports a delivery without an offset as None: -1 here.
                    .map(|a| (a[1].as_i64().unwrap_or(-1), value_of(name, &a[2])))
                    .collect();
                Outcome {
                    sent: r["sent"].as_i64().unwrap(),
                    acks,
                    failures: r["failures"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(Value::to_string)
                        .collect(),
                    unflushed: r["unflushed"].as_i64().unwrap(),
                    // kafka-python has no implicit acks (and reports none).
                    implicit: r["implicit_acks"].as_i64().unwrap_or(0),
                    implicit_lines: r["implicit_ack_lines"]
                        .as_array()
                        .map(|a| a.iter().map(Value::to_string).collect())
                        .unwrap_or_default(),
                }
            }
            Run::Rust { stop, thread, .. } => {
                stop.store(true, Ordering::SeqCst);
                let until = Instant::now() + within;
                while !thread.is_finished() {
                    assert!(Instant::now() < until, "{name}: no end within {within:?}");
                    std::thread::sleep(Duration::from_millis(20));
                }
                thread
                    .join()
                    .unwrap_or_else(|_| panic!("{name}: the producer thread panicked"))
            }
        }
    }
}

/// Runs `f`, adding the client's name to its panic message.
fn named<T>(name: &str, f: impl FnOnce() -> T) -> T {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|e| {
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        panic!("{name}: {msg}")
    })
}

fn value_of(name: &str, v: &Value) -> i64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{name}: acknowledged a value never sent: {v}"))
}

/// What the rdkafka producer's delivery reports tell the test.
#[derive(Default)]
struct Shared {
    acked: AtomicI64,
    acks: Mutex<Vec<(i64, i64)>>,
    failures: Mutex<Vec<String>>,
    /// Records acknowledged implicitly ([`Outcome::implicit`]) and the first log lines.
    implicit: AtomicI64,
    implicit_lines: Mutex<Vec<String>>,
}

struct Reports(Arc<Shared>);

impl ClientContext for Reports {
    /// Counts librdkafka's implicit acks ("N message(s) implicitly acked", facility
    /// IMPLICITACK, debug context "eos"); other lines go to the default logger.
    fn log(&self, level: RDKafkaLogLevel, fac: &str, line: &str) {
        if let Some(n) = implicit_acks(line) {
            self.0.implicit.fetch_add(n, Ordering::SeqCst);
            let mut lines = self.0.implicit_lines.lock().unwrap();
            if lines.len() < 10 {
                lines.push(line.to_owned());
            }
        } else if matches!(
            level,
            RDKafkaLogLevel::Emerg
                | RDKafkaLogLevel::Alert
                | RDKafkaLogLevel::Critical
                | RDKafkaLogLevel::Error
                | RDKafkaLogLevel::Warning
        ) {
            eprintln!("rdkafka crate producer: {fac}: {line}");
        }
    }
}

/// N of librdkafka's "... N message(s) implicitly acked by subsequent batch success ...".
fn implicit_acks(line: &str) -> Option<i64> {
    let head = line.split(" message(s) implicitly acked").next()?;
    if head.len() == line.len() {
        return None;
    }
    head.rsplit(' ').next()?.parse().ok()
}

impl ProducerContext for Reports {
    type DeliveryOpaque = ();

    fn delivery(&self, r: &DeliveryResult<'_>, _: ()) {
        let value = |m: &rdkafka::message::BorrowedMessage<'_>| {
            m.payload()
                .and_then(|p| std::str::from_utf8(p).ok())
                .and_then(|s| s.parse::<i64>().ok())
                .unwrap_or(-1)
        };
        match r {
            Ok(m) => {
                self.0.acks.lock().unwrap().push((m.offset(), value(m)));
                self.0.acked.fetch_add(1, Ordering::SeqCst);
            }
            Err((e, m)) => self
                .0
                .failures
                .lock()
                .unwrap()
                .push(format!("{}: {e}", value(m))),
        }
    }
}

/// The rdkafka crate's producer on a thread: values "0", "1", ... at the scripts' pace
/// (~500 records/s) until `stop`, then a flush.
fn rust_producer(bootstrap: &str, topic: &str) -> Run {
    let shared = Arc::new(Shared::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", bootstrap);
    for (k, v) in LIBRDKAFKA {
        cfg.set(*k, *v);
    }
    cfg.set("debug", "eos"); // for the implicit acks (Shared::implicit)
    let producer: BaseProducer<Reports> = cfg
        .create_with_context(Reports(shared.clone()))
        .expect("rdkafka producer");
    let (topic, flag, reports) = (topic.to_owned(), stop.clone(), shared.clone());
    let thread = std::thread::spawn(move || {
        let mut sent = 0i64;
        while !flag.load(Ordering::SeqCst) {
            let value = sent.to_string();
            let record = BaseRecord::<(), str>::to(&topic)
                .partition(0)
                .payload(value.as_str());
            match producer.send(record) {
                Ok(()) => sent += 1,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    producer.poll(Duration::from_millis(50));
                    continue;
                }
                Err((e, _)) => {
                    reports
                        .failures
                        .lock()
                        .unwrap()
                        .push(format!("{sent}: not sent: {e}"));
                    break;
                }
            }
            producer.poll(Duration::ZERO);
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = producer.flush(Duration::from_secs(40));
        Outcome {
            sent,
            acks: std::mem::take(&mut *reports.acks.lock().unwrap()),
            failures: std::mem::take(&mut *reports.failures.lock().unwrap()),
            unflushed: i64::from(producer.in_flight_count()),
            implicit: reports.implicit.load(Ordering::SeqCst),
            implicit_lines: std::mem::take(&mut *reports.implicit_lines.lock().unwrap()),
        }
    });
    Run::Rust {
        shared,
        stop,
        thread,
    }
}

/// (offset, value) of every record of partition 0 of each of `topics`, read from the
/// beginning up to its high watermark (asked first: the producers are done) with ONE consumer
/// of the rdkafka crate (assign, no group). A failure's message ends with `diagnose()`.
pub fn read_all(
    bootstrap: &str,
    topics: &[&str],
    diagnose: impl Fn() -> String,
) -> BTreeMap<String, Vec<(i64, String)>> {
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", bootstrap)
        .set("group.id", "skiff-compat-unused")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "error");
    let c: BaseConsumer = cfg.create().expect("rdkafka consumer");
    let mut tpl = TopicPartitionList::new();
    let mut ends = BTreeMap::new();
    for t in topics {
        let (_, hi) = c
            .fetch_watermarks(t, 0, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("the watermarks of {t}: {e}\n{}", diagnose()));
        ends.insert((*t).to_owned(), hi);
        tpl.add_partition_offset(t, 0, Offset::Beginning)
            .expect("partition offset");
    }
    c.assign(&tpl).expect("assign");
    let mut out: BTreeMap<String, Vec<(i64, String)>> = BTreeMap::new();
    let next = |out: &BTreeMap<String, Vec<(i64, String)>>, t: &str| {
        out.get(t).and_then(|v| v.last()).map_or(0, |(o, _)| o + 1)
    };
    let until = Instant::now() + Duration::from_secs(30);
    while ends.iter().any(|(t, hi)| next(&out, t) < *hi) {
        assert!(
            Instant::now() < until,
            "reading back did not reach the high watermarks {ends:?} in 30 s\n{}",
            diagnose()
        );
        match c.poll(Duration::from_millis(200)) {
            None => {}
            Some(Err(e)) => panic!("reading back {topics:?}: {e}\n{}", diagnose()),
            Some(Ok(m)) => out.entry(m.topic().to_owned()).or_default().push((
                m.offset(),
                String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned(),
            )),
        }
    }
    out
}

/// Every record the client sent was acknowledged, and is stored exactly once; the offsets are
/// contiguous from 0; every acknowledged record is at its acknowledged offset. Panics with the
/// client's name and the first violation.
pub fn check_exactly_once(name: &str, out: &Outcome, stored: &[(i64, String)]) {
    if let Err(e) = exactly_once(out, stored) {
        panic!("{name}: {e}");
    }
}

fn exactly_once(out: &Outcome, stored: &[(i64, String)]) -> Result<(), String> {
    let fail = |cond: bool, msg: &dyn Fn() -> String| if cond { Ok(()) } else { Err(msg()) };
    fail(out.unflushed == 0, &|| {
        format!("{} records never resolved", out.unflushed)
    })?;
    fail(out.failures.is_empty(), &|| {
        format!("deliveries failed: {:?}", out.failures)
    })?;
    fail(out.acks.len() as i64 == out.sent, &|| {
        format!(
            "{} of {} sent records acknowledged",
            out.acks.len(),
            out.sent
        )
    })?;
    let offsets: Vec<i64> = stored.iter().map(|(o, _)| *o).collect();
    fail(
        offsets == (0..stored.len() as i64).collect::<Vec<_>>(),
        &|| {
            let jumps: Vec<_> = offsets
                .windows(2)
                .filter(|w| w[1] != w[0] + 1)
                .take(10)
                .collect();
            format!("offsets not contiguous from 0; jumps at {jumps:?}")
        },
    )?;
    let mut at: BTreeMap<i64, i64> = BTreeMap::new();
    let mut copies: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for (o, v) in stored {
        let v: i64 = v
            .parse()
            .map_err(|_| format!("offset {o} holds {v:?}, never sent"))?;
        at.insert(*o, v);
        copies.entry(v).or_default().push(*o);
    }
    let dups: Vec<_> = copies
        .iter()
        .filter(|(_, o)| o.len() > 1)
        .take(10)
        .collect();
    fail(dups.is_empty(), &|| {
        format!("records stored more than once (value, offsets): {dups:?}")
    })?;
    let never: Vec<_> = copies
        .keys()
        .filter(|v| !(0..out.sent).contains(*v))
        .collect();
    fail(never.is_empty(), &|| {
        format!("values never sent: {never:?}")
    })?;
    let missing: Vec<i64> = (0..out.sent)
        .filter(|v| !copies.contains_key(v))
        .take(10)
        .collect();
    fail(missing.is_empty(), &|| {
        format!(
            "{} of {} sent records not stored, e.g. {missing:?}",
            out.sent - copies.len() as i64,
            out.sent
        )
    })?;
    let no_offset: Vec<i64> = out
        .acks
        .iter()
        .filter(|(o, _)| *o < 0)
        .map(|(_, v)| *v)
        .collect();
    // Stored exactly once is checked above for every value sent, these included.
    fail(no_offset.len() as i64 <= out.implicit, &|| {
        let n = no_offset.len();
        let first: Vec<_> = no_offset.iter().take(10).collect();
        format!(
            "{n} records acknowledged without an offset, e.g. values {first:?}, but only {} \
             acknowledged implicitly by librdkafka ({:?})",
            out.implicit, out.implicit_lines
        )
    })?;
    if !no_offset.is_empty() {
        eprintln!(
            "{} records acknowledged implicitly (no offset), all stored once: {:?}",
            no_offset.len(),
            out.implicit_lines
        );
    }
    // An implicit ack carries no offset (-1): its value was checked above to be stored once.
    for (o, v) in out.acks.iter().filter(|(o, _)| *o >= 0) {
        fail(at.get(o) == Some(v), &|| {
            format!("acknowledged record {v} is not at its acknowledged offset {o}")
        })?;
    }
    Ok(())
}

/// The exactly-once check itself: it accepts a clean log and rejects a lost, a duplicated and
/// a misplaced acknowledged record, and an offset gap (no cluster needed).
#[test]
fn failover_check_rejects_loss_duplicates_and_misplaced_acks() {
    let log = |values: &[i64]| -> Vec<(i64, String)> {
        values
            .iter()
            .enumerate()
            .map(|(o, v)| (o as i64, v.to_string()))
            .collect()
    };
    let out = Outcome {
        sent: 3,
        acks: vec![(0, 0), (1, 1), (2, 2)],
        failures: Vec::new(),
        unflushed: 0,
        implicit: 0,
        implicit_lines: Vec::new(),
    };
    assert_eq!(exactly_once(&out, &log(&[0, 1, 2])), Ok(()), "a clean log");
    let mut gap = log(&[0, 1, 2]);
    gap[2].0 = 3;
    for (what, stored) in [
        ("a lost record", log(&[0, 1])),
        ("a duplicate", log(&[0, 1, 1, 2])),
        ("acks at other offsets", log(&[0, 2, 1])),
        ("an offset gap", gap),
    ] {
        let verdict = exactly_once(&out, &stored);
        assert!(verdict.is_err(), "{what} passed");
        eprintln!("{what}: {}", verdict.unwrap_err());
    }
    let no_offset = Outcome {
        acks: vec![(0, 0), (-1, 1), (2, 2)],
        ..out
    };
    let verdict = exactly_once(&no_offset, &log(&[0, 1, 2]));
    assert!(verdict.is_err(), "an ack without an offset passed");
    eprintln!("an ack without an offset: {}", verdict.unwrap_err());
    // librdkafka's implicit ack: allowed, as many as it reported, when stored exactly once.
    let implicit = Outcome {
        implicit: 1,
        ..no_offset
    };
    assert_eq!(
        exactly_once(&implicit, &log(&[0, 1, 2])),
        Ok(()),
        "an implicit ack"
    );
    assert!(
        exactly_once(&implicit, &log(&[0, 2])).is_err(),
        "an implicit ack of a lost record passed"
    );
    let two = Outcome {
        acks: vec![(-1, 0), (-1, 1), (2, 2)],
        ..implicit
    };
    assert!(
        exactly_once(&two, &log(&[0, 1, 2])).is_err(),
        "more acks without an offset than implicit acks passed"
    );
    assert_eq!(
        implicit_acks(
            "[thrd:localhost:9092/1]: localhost:9092/1: t [0] 3 message(s) implicitly acked by \
             subsequent batch success (msgids 5..7, last acked 4)"
        ),
        Some(3)
    );
    assert_eq!(implicit_acks("some other line"), None);
}
