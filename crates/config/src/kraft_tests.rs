use super::*;
use crate::listeners::parse_listeners;

fn listeners(v: &str) -> Vec<Listener> {
    parse_listeners("listeners", v).unwrap()
}

/// A combined single-voter node, the one shape Skiff runs in KRaft mode today.
fn combined<'a>(ls: &'a [Listener]) -> Input<'a> {
    Input {
        process_roles: Some("broker,controller"),
        node_id: Some(1),
        voters: Some("1@localhost:9093"),
        bootstrap_servers: None,
        controller_listener_names: Some("CONTROLLER"),
        listeners: ls,
    }
}

fn message(r: Result<Option<Kraft>, ConfigError>) -> String {
    match r {
        Err(ConfigError::Kraft(m)) => m,
        other => panic!("expected a KRaft error, got {other:?}"),
    }
}

#[test]
fn no_process_roles_is_the_single_node() {
    let ls = listeners("PLAINTEXT://127.0.0.1:9092");
    for roles in [None, Some(""), Some(" , ")] {
        let input = Input {
            process_roles: roles,
            listeners: &ls,
            ..Input::default()
        };
        assert_eq!(check(&input).unwrap(), None, "{roles:?}");
    }
}

#[test]
fn roles_parse_as_kafka() {
    assert_eq!(parse_roles(Some("broker")).unwrap(), (true, false));
    assert_eq!(
        parse_roles(Some(" controller , broker ")).unwrap(),
        (true, true)
    );
    assert_eq!(
        parse_roles(Some("broker,zookeeper"))
            .unwrap_err()
            .to_string(),
        "Invalid value zookeeper for configuration process.roles: String must be one of: broker, controller"
    );
    let ConfigError::Kraft(m) = parse_roles(Some("broker,broker")).unwrap_err() else {
        panic!()
    };
    assert_eq!(
        m,
        "Duplicate role names found in `process.roles`: ArrayBuffer(broker, broker)"
    );
}

#[test]
fn voters_parse_as_kafka() {
    let v = parse_voters(Some("1@localhost:9093, 2@[::1]:9094,3@10.0.0.3:19093")).unwrap();
    assert_eq!(v.len(), 3);
    assert_eq!((v[1].id, v[1].host.as_str(), v[1].port), (2, "::1", 9094));
    assert_eq!(v[1].to_string(), "2@[::1]:9094");
    assert_eq!(v[2].to_string(), "3@10.0.0.3:19093");
    let form = "Each entry should be in the form `{id}@{host}:{port}`.";
    let cases = [
        (
            "localhost:9093",
            format!("Invalid configuration value for controller.quorum.voters. {form}"),
        ),
        (
            "1@",
            format!("Invalid configuration value for controller.quorum.voters. {form}"),
        ),
        (
            "1@a@b:1",
            format!("Invalid configuration value for controller.quorum.voters. {form}"),
        ),
        (
            "x@localhost:9093",
            "Failed to parse voter ID as an integer from x".to_string(),
        ),
        (
            "1@localhost",
            format!(
                "Failed to parse host name from entry 1@localhost for the configuration controller.quorum.voters. {form}"
            ),
        ),
        (
            "1@bad host:9093",
            format!(
                "Failed to parse host name from entry 1@bad host:9093 for the configuration controller.quorum.voters. {form}"
            ),
        ),
        (
            "1@localhost:port",
            format!(
                "Failed to parse host port from entry 1@localhost:port for the configuration controller.quorum.voters. {form}"
            ),
        ),
        (
            "1@a:1,1@b:2",
            "controller.quorum.voters names voter 1 twice; give each voter one entry".to_string(),
        ),
    ];
    for (value, want) in cases {
        match parse_voters(Some(value)) {
            Err(ConfigError::Kraft(m)) => assert_eq!(m, want, "{value}"),
            other => panic!("{value}: {other:?}"),
        }
    }
}

#[test]
fn combined_single_voter_is_accepted() {
    let ls = listeners("PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093");
    let k = check(&combined(&ls)).unwrap().unwrap();
    assert!(k.broker && k.controller);
    assert_eq!(k.node_id, 1);
    assert!(k.is_controller_listener("controller"));
    assert!(!k.is_controller_listener("PLAINTEXT"));
    check_supported(&k).unwrap();
}

/// Issue 16: combined nodes of a static quorum of several voters run.
#[test]
fn combined_voter_of_three_is_accepted() {
    let ls = listeners("PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093");
    let mut input = combined(&ls);
    input.voters = Some("1@localhost:9093,2@localhost:9095,3@localhost:9097");
    let k = check(&input).unwrap().unwrap();
    assert_eq!(k.voters.len(), 3);
    check_supported(&k).unwrap();
}

/// Kafka's `validateValues` rules, one row each: (change to the combined node, message).
#[test]
fn kafka_rules_with_kafkas_messages() {
    let both = listeners("PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093");
    let plain = listeners("PLAINTEXT://127.0.0.1:9092");
    let only_controller = listeners("CONTROLLER://127.0.0.1:9093");
    type Edit = fn(&mut Input<'_>);
    let rows: Vec<(&str, &[Listener], Edit, &str)> = vec![
        (
            "no node.id",
            &both,
            |i| i.node_id = None,
            "Missing required configuration \"node.id\" which has no default value.",
        ),
        (
            "negative node.id",
            &both,
            |i| i.node_id = Some(-1),
            "Missing required configuration \"node.id\" which has no default value.",
        ),
        (
            "no voters, no bootstrap servers",
            &both,
            |i| i.voters = None,
            "If using process.roles, either controller.quorum.bootstrap.servers must contain the set of bootstrap controllers or controller.quorum.voters must contain a parseable set of controllers.",
        ),
        (
            "controller not among the voters",
            &both,
            |i| i.voters = Some("2@h:1,3@h:2"),
            "requirement failed: If process.roles contains the 'controller' role, the node id 1 must be included in the set of voters controller.quorum.voters=Set(2, 3)",
        ),
        (
            "controller listener not bound",
            &plain,
            |_| {},
            "requirement failed: controller.listener.names must contain at least one value appearing in the 'listeners' configuration when running the KRaft controller role",
        ),
        (
            "a controller listener name not bound",
            &both,
            |i| i.controller_listener_names = Some("CONTROLLER,OTHER"),
            "requirement failed: controller.listener.names must only contain values appearing in the 'listeners' configuration when running the KRaft controller role",
        ),
        (
            "combined with only the controller listener",
            &only_controller,
            |_| {},
            "requirement failed: There must be at least one broker advertised listener. Perhaps all listeners appear in controller.listener.names?",
        ),
        (
            "controller-only with a broker listener",
            &both,
            |i| i.process_roles = Some("controller"),
            "requirement failed: The listeners config must only contain KRaft controller listeners from controller.listener.names when process.roles=controller",
        ),
        (
            "broker-only among the voters",
            &plain,
            |i| i.process_roles = Some("broker"),
            "requirement failed: If process.roles contains just the 'broker' role, the node id 1 must not be included in the set of voters controller.quorum.voters=Set(1)",
        ),
        (
            "broker-only without controller.listener.names",
            &plain,
            |i| {
                i.process_roles = Some("broker");
                i.voters = Some("2@h:9093");
                i.controller_listener_names = None;
            },
            "requirement failed: controller.listener.names must contain at least one value when running KRaft with just the broker role",
        ),
        (
            "broker-only binding the controller listener",
            &both,
            |i| {
                i.process_roles = Some("broker");
                i.voters = Some("2@h:9093");
            },
            "requirement failed: controller.listener.names must not contain a value appearing in the 'listeners' configuration when running KRaft with just the broker role",
        ),
    ];
    for (name, ls, edit, want) in rows {
        let mut input = combined(ls);
        edit(&mut input);
        assert_eq!(message(check(&input)), want, "{name}");
    }
}

/// Broker-only and controller-only nodes of a static quorum run (issue 16).
#[test]
fn broker_only_and_controller_only_nodes_are_accepted() {
    let plain = listeners("PLAINTEXT://127.0.0.1:9092");
    let only_controller = listeners("CONTROLLER://127.0.0.1:9093");
    let mut broker = combined(&plain);
    broker.process_roles = Some("broker");
    broker.voters = Some("2@h:9093");
    let k = check(&broker).unwrap().unwrap();
    assert!(k.broker && !k.controller);
    check_supported(&k).unwrap();
    let mut controller = combined(&only_controller);
    controller.process_roles = Some("controller");
    let k = check(&controller).unwrap().unwrap();
    assert!(!k.broker && k.controller);
    check_supported(&k).unwrap();
}

/// Valid Kafka configurations that Skiff does not run yet are refused, each naming the fix.
#[test]
fn quorums_skiff_cannot_run_yet_are_refused() {
    let both = listeners("PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093");
    type Edit = fn(&mut Input<'_>);
    let rows: Vec<(&str, &[Listener], Edit, &str)> = vec![(
        "dynamic quorum",
        &both,
        |i| {
            i.voters = None;
            i.bootstrap_servers = Some("localhost:9093");
        },
        "asks for a dynamic quorum (KIP-853)",
    )];
    for (name, ls, edit, want) in rows {
        let mut input = combined(ls);
        edit(&mut input);
        let k = check(&input)
            .unwrap_or_else(|e| panic!("{name}: Kafka accepts it: {e}"))
            .unwrap();
        let ConfigError::Kraft(m) = check_supported(&k).unwrap_err() else {
            panic!("{name}")
        };
        assert!(m.contains(want), "{name}: {m}");
        assert!(m.contains("controller.quorum.voters"), "{name}: {m}");
    }
}
