//! Apache Kafka's own security tools against Skiff (issue 19), run through their main classes
//! from the pinned Kafka of `scripts/kafka-reference.sh`, as an operator runs `bin/kafka-*.sh`:
//! - `kafka-configs --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=...]'
//!   --entity-type users` (AlterUserScramCredentials) and `--describe` (the mechanisms and
//!   iterations Kafka's tool prints);
//! - `kafka-acls --add / --list / --remove` (CreateAcls / DescribeAcls / DeleteAcls);
//! - the Java console producer logging in with that SCRAM user (`sasl.jaas.config` with
//!   `ScramLoginModule`) writes where the ACL allows and is refused where it does not; once the
//!   credential is deleted the login fails.
//!
//! The broker: a PLAINTEXT listener for the tools (`User:ANONYMOUS`, a super user here) and a
//! SASL_PLAINTEXT listener offering SCRAM-SHA-256/512, StandardAuthorizer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use skiff_compat::{Broker, Output, kafka_tool, kafka_tool_input};
use skiff_testkit::process::free_port;

const CONFIGS: &str = "kafka.admin.ConfigCommand";
const ACLS: &str = "org.apache.kafka.tools.AclCommand";
const PRODUCER: &str = "org.apache.kafka.tools.ConsoleProducer";

fn tool(class: &str, args: &[&str]) -> Output {
    let out = kafka_tool(class, args);
    out.assert_success(&format!("{class} {}", args.join(" ")));
    out
}

/// The console producer as `alice` (SCRAM-SHA-256) writing `lines` to `topic`.
fn produce_as_alice(sasl: &str, config: &std::path::Path, topic: &str, lines: &str) -> Output {
    kafka_tool_input(
        PRODUCER,
        &[
            "--bootstrap-server",
            sasl,
            "--topic",
            topic,
            "--producer.config",
            config.to_str().unwrap(),
            "--producer-property",
            "max.block.ms=8000",
            "--producer-property",
            "delivery.timeout.ms=8000",
            "--producer-property",
            "request.timeout.ms=5000",
        ],
        lines.as_bytes(),
    )
}

#[test]
fn kafka_tools_manage_scram_users_and_acls_and_the_java_client_logs_in() {
    let t0 = Instant::now();
    let (plain_port, sasl_port) = (free_port(), free_port());
    let broker = Broker::builder()
        .one_at_a_time(true)
        .set(
            "listeners",
            &format!("PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"),
        )
        .set("sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512")
        .set(
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        )
        .set("super.users", "User:ANONYMOUS")
        .set("allow.everyone.if.no.acl.found", "false")
        .start();
    let plain = format!("127.0.0.1:{plain_port}");
    let sasl = format!("127.0.0.1:{sasl_port}");
    eprintln!("phase broker start: {:?}", t0.elapsed());

    // ---- SCRAM users with kafka-configs ---------------------------------------------------
    let t = Instant::now();
    // One mechanism per call: Kafka's controller refuses a user altered twice in one request
    // (ScramControlManager: DUPLICATE_RESOURCE), and so does Skiff's.
    for cfg in [
        "SCRAM-SHA-256=[iterations=8192,password=alice-secret]",
        "SCRAM-SHA-512=[password=alice-secret]",
    ] {
        let added = tool(
            CONFIGS,
            &[
                "--bootstrap-server",
                &plain,
                "--alter",
                "--add-config",
                cfg,
                "--entity-type",
                "users",
                "--entity-name",
                "alice",
            ],
        );
        assert!(
            added
                .stdout
                .contains("Completed updating config for user alice"),
            "{}",
            added.stdout
        );
    }
    let both = kafka_tool(
        CONFIGS,
        &[
            "--bootstrap-server",
            &plain,
            "--alter",
            "--add-config",
            "SCRAM-SHA-256=[password=x],SCRAM-SHA-512=[password=y]",
            "--entity-type",
            "users",
            "--entity-name",
            "bob",
        ],
    );
    assert!(
        both.stderr
            .contains("A user credential cannot be altered twice in the same request"),
        "Kafka's DUPLICATE_RESOURCE for two mechanisms of one user in one request:\n{}",
        both.stderr
    );
    let described = tool(
        CONFIGS,
        &[
            "--bootstrap-server",
            &plain,
            "--describe",
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
        ],
    );
    assert!(
        described.stdout.contains("SCRAM-SHA-256=iterations=8192")
            && described.stdout.contains("SCRAM-SHA-512=iterations=4096"),
        "kafka-configs --describe of user alice:\n{}",
        described.stdout
    );
    eprintln!("phase kafka-configs SCRAM users: {:?}", t.elapsed());

    // ---- ACLs with kafka-acls --------------------------------------------------------------
    let t = Instant::now();
    for topic in ["sec-allowed", "sec-denied"] {
        tool(
            "org.apache.kafka.tools.TopicCommand",
            &["--bootstrap-server", &plain, "--create", "--topic", topic],
        );
    }
    tool(
        ACLS,
        &[
            "--bootstrap-server",
            &plain,
            "--add",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Write",
            "--topic",
            "sec-allowed",
        ],
    );
    let listed = tool(
        ACLS,
        &[
            "--bootstrap-server",
            &plain,
            "--list",
            "--topic",
            "sec-allowed",
        ],
    );
    assert!(
        listed.stdout.contains("principal=User:alice")
            && listed.stdout.contains("operation=WRITE")
            && listed.stdout.contains("permissionType=ALLOW"),
        "kafka-acls --list:\n{}",
        listed.stdout
    );
    eprintln!("phase kafka-acls add + list: {:?}", t.elapsed());

    // ---- the Java client logs in with SCRAM ----------------------------------------------
    let t = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("alice.properties");
    std::fs::write(
        &config,
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n\
         sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
         username=\"alice\" password=\"alice-secret\";\n",
    )
    .unwrap();
    let ok = produce_as_alice(&sasl, &config, "sec-allowed", "one\ntwo\n");
    ok.assert_success("console producer as alice to sec-allowed");
    let end = tool(
        "org.apache.kafka.tools.GetOffsetShell",
        &["--bootstrap-server", &plain, "--topic", "sec-allowed"],
    );
    assert!(end.stdout.contains("sec-allowed:0:2"), "{}", end.stdout);
    let refused = produce_as_alice(&sasl, &config, "sec-denied", "three\n");
    let text = format!("{}{}", refused.stdout, refused.stderr);
    assert!(
        text.contains("TopicAuthorizationException")
            || text.contains("Not authorized to access topics"),
        "a write without an ACL must be refused:\n{text}"
    );
    eprintln!(
        "phase SCRAM login, allowed and refused writes: {:?}",
        t.elapsed()
    );

    // ---- remove the ACL and the credential -----------------------------------------------
    let t = Instant::now();
    tool(
        ACLS,
        &[
            "--bootstrap-server",
            &plain,
            "--remove",
            "--force",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Write",
            "--topic",
            "sec-allowed",
        ],
    );
    let listed = tool(
        ACLS,
        &[
            "--bootstrap-server",
            &plain,
            "--list",
            "--topic",
            "sec-allowed",
        ],
    );
    assert!(!listed.stdout.contains("User:alice"), "{}", listed.stdout);
    tool(
        CONFIGS,
        &[
            "--bootstrap-server",
            &plain,
            "--alter",
            "--delete-config",
            "SCRAM-SHA-256",
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
        ],
    );
    let failed = produce_as_alice(&sasl, &config, "sec-allowed", "four\n");
    let text = format!("{}{}", failed.stdout, failed.stderr);
    assert!(
        text.contains("Authentication failed") || text.contains("SaslAuthenticationException"),
        "a deleted SCRAM credential must not log in:\n{text}"
    );
    eprintln!("phase ACL removed, credential deleted: {:?}", t.elapsed());
    drop(broker);
}
