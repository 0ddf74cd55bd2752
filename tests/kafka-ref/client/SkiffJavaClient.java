// The Apache Kafka Java client (kafka-clients, pinned in tests/kafka-ref/pom.xml) driven against
// Skiff by tests/compat/tests/java_client.rs. Built once by `scripts/kafka-reference.sh
// build-client` (javac against the fetched libs) into target/kafka-ref/<v>/skiff-java-client.jar.
//
//   java -cp '<libs>/*:<jar>' SkiffJavaClient COMMAND JSON
//
// Each command runs one whole scenario (a JVM start costs ~1 s) and prints exactly ONE JSON line
// on stdout: the facts the Rust test compares. Failures a test expects (a rejected protocol) are
// reported in the JSON; anything else throws, and the non-zero exit fails the test.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class SkiffJavaClient {
    static final ObjectMapper M = new ObjectMapper();
    static final long DEADLINE_MS = 20_000;

    public static void main(String[] args) throws Exception {
        if (args.length != 2) throw new IllegalArgumentException("usage: SkiffJavaClient COMMAND JSON");
        JsonNode p = M.readTree(args[1]);
        ObjectNode out;
        switch (args[0]) {
            case "produce_consume": out = produceConsume(p); break;
            case "group": out = group(p); break;
            case "admin": out = admin(p); break;
            case "cluster_ops": out = clusterOps(p); break;
            case "log_dir_move": out = logDirMove(p); break;
            case "config_resources": out = configResources(p); break;
            case "mixed_group": out = mixedGroup(p); break;
            case "transactions": out = transactions(p); break;
            default: throw new IllegalArgumentException("unknown command " + args[0]);
        }
        System.out.println(M.writeValueAsString(out));
        System.out.flush();
        System.exit(0);
    }

    static Properties base(JsonNode p) {
        Properties c = new Properties();
        c.put("bootstrap.servers", p.get("bootstrap").asText());
        c.put("request.timeout.ms", "10000");
        c.put("default.api.timeout.ms", "15000");
        return c;
    }

    static KafkaProducer<byte[], byte[]> txnProducer(JsonNode p, String tid) {
        Properties c = base(p);
        c.put("key.serializer", ByteArraySerializer.class.getName());
        c.put("value.serializer", ByteArraySerializer.class.getName());
        c.put("transactional.id", tid);
        c.put("max.block.ms", "20000");
        return new KafkaProducer<>(c);
    }

    // transactions {bootstrap, topic, group}: issue 18. A transactional producer commits 4
    // records, aborts 3 (flushed first), then commits 2 with sendOffsetsToTransaction (offset 5 of
    // <topic>-0 for `group`); read_committed and read_uncommitted consumers read the topic;
    // the group's committed offset; DescribeTransactions / ListTransactions; a second
    // producer with the same transactional.id fences the first (its commit fails).
    static ObjectNode transactions(JsonNode p) throws Exception {
        String topic = p.get("topic").asText();
        String gid = p.get("group").asText();
        String tid = topic + "-txn";
        ObjectNode out = M.createObjectNode();
        try (Admin admin = Admin.create(base(p))) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get(15, TimeUnit.SECONDS);
        }
        try (KafkaProducer<byte[], byte[]> prod = txnProducer(p, tid)) {
            prod.initTransactions();
            int[][] plan = {{4, 1}, {3, 0}, {2, 1}};
            for (int t = 0; t < plan.length; t++) {
                prod.beginTransaction();
                for (int k = 0; k < plan[t][0]; k++)
                    prod.send(new ProducerRecord<>(topic, k % 2, b("t" + t + "-k" + k), b("v" + k)));
                if (t == 2)
                    prod.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(5)),
                        new ConsumerGroupMetadata(gid));
                // Sent before the abort: the Java client drops unsent batches of an aborted txn.
                prod.flush();
                long t0 = System.currentTimeMillis();
                if (plan[t][1] == 1) prod.commitTransaction(); else prod.abortTransaction();
                out.put("end_txn_" + t + "_ms_le_5s", System.currentTimeMillis() - t0 <= 5000);
            }
        }
        for (String iso : List.of("read_committed", "read_uncommitted")) {
            try (KafkaConsumer<byte[], byte[]> c = consumer(p, Map.of("isolation.level", iso))) {
                List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
                c.assign(tps);
                c.seekToBeginning(tps);
                int want = iso.equals("read_committed") ? 6 : 9;
                TreeSet<String> keys = new TreeSet<>();
                for (ConsumerRecord<byte[], byte[]> r : pollN(c, want)) keys.add(s(r.key()));
                out.putArray(iso).addAll(keys.stream().map(M.getNodeFactory()::textNode).toList());
                ObjectNode ends = out.putObject(iso + "_end_offsets");
                c.endOffsets(tps).forEach((tp, o) -> ends.put(Integer.toString(tp.partition()), o));
            }
        }
        try (Admin admin = Admin.create(base(p))) {
            OffsetAndMetadata committed = admin.listConsumerGroupOffsets(gid).partitionsToOffsetAndMetadata()
                .get(15, TimeUnit.SECONDS).get(new TopicPartition(topic, 0));
            out.put("group_committed", committed == null ? -1 : committed.offset());
            TransactionDescription d = admin.describeTransactions(List.of(tid)).description(tid).get(15, TimeUnit.SECONDS);
            out.put("describe_state", d.state().toString());
            out.put("describe_epoch", d.producerEpoch());
            out.put("describe_partitions", d.topicPartitions().size());
            boolean listed = admin.listTransactions().all().get(15, TimeUnit.SECONDS).stream()
                .anyMatch(l -> l.transactionalId().equals(tid) && l.state() == TransactionState.COMPLETE_COMMIT);
            out.put("listed", listed);
        }
        try (KafkaProducer<byte[], byte[]> a = txnProducer(p, tid)) {
            a.initTransactions();
            a.beginTransaction();
            a.send(new ProducerRecord<>(topic, 0, b("fenced"), b("x"))).get(15, TimeUnit.SECONDS);
            try (KafkaProducer<byte[], byte[]> b2 = txnProducer(p, tid)) {
                b2.initTransactions();
                try {
                    a.commitTransaction();
                    out.put("fenced_commit", "committed");
                } catch (KafkaException e) {
                    out.put("fenced_commit", e.getClass().getSimpleName());
                }
            }
        }
        return out;
    }

    static String s(byte[] b) { return b == null ? null : new String(b, StandardCharsets.UTF_8); }
    static byte[] b(String s) { return s == null ? null : s.getBytes(StandardCharsets.UTF_8); }

    static KafkaConsumer<byte[], byte[]> consumer(JsonNode p, Map<String, String> extra) {
        Properties c = base(p);
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        c.put("auto.offset.reset", "earliest");
        c.put("enable.auto.commit", "false");
        c.putAll(extra);
        return new KafkaConsumer<>(c);
    }

    static ObjectNode rec(ConsumerRecord<byte[], byte[]> r) {
        ObjectNode o = M.createObjectNode();
        o.put("topic", r.topic());
        o.put("partition", r.partition());
        o.put("offset", r.offset());
        o.put("timestamp", r.timestamp());
        o.put("timestamp_type", r.timestampType().toString());
        o.put("key", s(r.key()));
        o.put("value", s(r.value()));
        ArrayNode hs = o.putArray("headers");
        for (Header h : r.headers()) hs.addArray().add(h.key()).add(s(h.value()));
        o.put("leader_epoch", r.leaderEpoch().orElse(-1));
        return o;
    }

    /** Polls until `n` records arrived or the deadline passed. */
    static List<ConsumerRecord<byte[], byte[]>> pollN(KafkaConsumer<byte[], byte[]> c, int n) {
        List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
        long end = System.currentTimeMillis() + DEADLINE_MS;
        while (got.size() < n && System.currentTimeMillis() < end)
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) got.add(r);
        return got;
    }

    // produce_consume {bootstrap, topic, variants: [{name, acks, compression, idempotent?}],
    //                  per_variant, base_timestamp}
    // One producer per variant sends per_variant records (key, value, two headers, an explicit
    // timestamp) to partition 0 of `topic` (created here, 1 partition); then one consumer reads
    // everything back with assign + seekToBeginning, asks offsetsForTimes for the middle
    // timestamp and seeks to that offset.
    static ObjectNode produceConsume(JsonNode p) throws Exception {
        String topic = p.get("topic").asText();
        int per = p.get("per_variant").asInt();
        long ts0 = p.get("base_timestamp").asLong();
        ObjectNode out = M.createObjectNode();
        try (Admin admin = Admin.create(base(p))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(15, TimeUnit.SECONDS);
        }
        ArrayNode sent = out.putArray("sent");
        int i = 0;
        for (JsonNode v : p.get("variants")) {
            Properties c = base(p);
            c.put("key.serializer", ByteArraySerializer.class.getName());
            c.put("value.serializer", ByteArraySerializer.class.getName());
            c.put("compression.type", v.get("compression").asText());
            if (v.has("acks")) c.put("acks", v.get("acks").asText());
            if (v.has("idempotent")) c.put("enable.idempotence", v.get("idempotent").asText());
            c.put("linger.ms", "50");
            String name = v.get("name").asText();
            try (KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(c)) {
                List<Future<RecordMetadata>> fs = new ArrayList<>();
                List<ObjectNode> mine = new ArrayList<>();
                for (int k = 0; k < per; k++, i++) {
                    ObjectNode o = sent.addObject();
                    String key = name + "-k" + k;
                    String value = name + "-value-" + k + "-" + "x".repeat(200 + k);
                    long ts = ts0 + i * 1000L;
                    ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, 0, ts, b(key), b(value));
                    r.headers().add("variant", b(name)).add("n", b(Integer.toString(k)));
                    o.put("variant", name).put("key", key).put("value", value).put("timestamp", ts);
                    o.putArray("headers").add(M.createArrayNode().add("variant").add(name))
                        .add(M.createArrayNode().add("n").add(Integer.toString(k)));
                    fs.add(prod.send(r));
                    mine.add(o);
                }
                prod.flush();
                for (int k = 0; k < fs.size(); k++) {
                    RecordMetadata md = fs.get(k).get(15, TimeUnit.SECONDS);
                    mine.get(k).put("ack_offset", md.hasOffset() ? md.offset() : -1);
                    mine.get(k).put("ack_timestamp", md.timestamp());
                }
            }
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<byte[], byte[]> c = consumer(p, Map.of())) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            ArrayNode got = out.putArray("got");
            for (ConsumerRecord<byte[], byte[]> r : pollN(c, i)) got.add(rec(r));
            out.put("end_offset", c.endOffsets(List.of(tp)).get(tp));
            out.put("beginning_offset", c.beginningOffsets(List.of(tp)).get(tp));
            int mid = i / 2;
            long midTs = ts0 + mid * 1000L;
            OffsetAndTimestamp ot = c.offsetsForTimes(Map.of(tp, midTs - 500)).get(tp);
            out.put("offsets_for_time_query", midTs - 500);
            out.put("offsets_for_time_offset", ot == null ? -1 : ot.offset());
            out.put("offsets_for_time_timestamp", ot == null ? -1 : ot.timestamp());
            OffsetAndTimestamp after = c.offsetsForTimes(Map.of(tp, ts0 + i * 1000L + 1)).get(tp);
            out.put("offsets_for_time_after_end_is_null", after == null);
            if (ot != null) {
                c.seek(tp, ot.offset());
                List<ConsumerRecord<byte[], byte[]>> one = pollN(c, 1);
                out.put("after_seek_offset", one.isEmpty() ? -1 : one.get(0).offset());
                out.put("after_seek_key", one.isEmpty() ? null : s(one.get(0).key()));
            }
        }
        return out;
    }

    // group {bootstrap, topic, group, protocol, records}: produces `records` records over the
    // topic's 2 partitions (created here), then one consumer with group.protocol=`protocol`
    // subscribes, reads them all, commitSync, committed(), then commitAsync of offset 1 on
    // partition 0 and committed() again. A failure of the group protocol itself is returned as
    // {"error_class", "error_message"} (KIP-848 on a broker without it).
    static ObjectNode group(JsonNode p) throws Exception {
        String topic = p.get("topic").asText();
        String gid = p.get("group").asText();
        int n = p.get("records").asInt();
        ObjectNode out = M.createObjectNode();
        try (Admin admin = Admin.create(base(p))) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get(15, TimeUnit.SECONDS);
        }
        Properties pc = base(p);
        pc.put("key.serializer", ByteArraySerializer.class.getName());
        pc.put("value.serializer", ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(pc)) {
            for (int k = 0; k < n; k++)
                prod.send(new ProducerRecord<>(topic, k % 2, b("k" + k), b("v" + k))).get(15, TimeUnit.SECONDS);
        }
        Map<String, String> extra = new HashMap<>();
        extra.put("group.id", gid);
        extra.put("group.protocol", p.get("protocol").asText());
        if (p.get("protocol").asText().equals("classic")) {
            extra.put("session.timeout.ms", "10000");
            extra.put("heartbeat.interval.ms", "500");
        }
        TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
        try (KafkaConsumer<byte[], byte[]> c = consumer(p, extra)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<byte[], byte[]>> got;
            try {
                got = pollN(c, n);
            } catch (KafkaException e) {
                out.put("error_class", e.getClass().getName());
                out.put("error_message", String.valueOf(e.getMessage()));
                Throwable cause = e.getCause();
                out.put("cause", cause == null ? null : cause.getClass().getName() + ": " + cause.getMessage());
                return out;
            }
            out.put("consumed", got.size());
            ArrayNode assigned = out.putArray("assignment");
            c.assignment().stream().map(TopicPartition::toString).sorted().forEach(assigned::add);
            out.put("member_id", c.groupMetadata().memberId());
            out.put("generation", c.groupMetadata().generationId());
            c.commitSync();
            Map<TopicPartition, OffsetAndMetadata> com = c.committed(Set.of(p0, p1));
            out.put("committed_sync_p0", com.get(p0) == null ? -1 : com.get(p0).offset());
            out.put("committed_sync_p1", com.get(p1) == null ? -1 : com.get(p1).offset());
            AtomicReference<String> asyncErr = new AtomicReference<>("pending");
            c.commitAsync(Map.of(p0, new OffsetAndMetadata(1, "async-meta")),
                (offsets, e) -> asyncErr.set(e == null ? "ok" : e.toString()));
            long end = System.currentTimeMillis() + DEADLINE_MS;
            while (asyncErr.get().equals("pending") && System.currentTimeMillis() < end) c.poll(Duration.ofMillis(100));
            out.put("commit_async", asyncErr.get());
            OffsetAndMetadata a = c.committed(Set.of(p0)).get(p0);
            out.put("committed_async_p0", a == null ? -1 : a.offset());
            out.put("committed_async_meta", a == null ? null : a.metadata());
        }
        return out;
    }

    // admin {bootstrap, topic, group}: the Admin API over one topic (created with 2 partitions
    // and a retention.ms override) and a group that commits offsets on it. Every call's result
    // goes into the JSON; the Rust test checks it.
    /** The exception class of a failed future, or "ok". */
    static String outcome(KafkaFuture<?> f) {
        try {
            f.get();
            return "ok";
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    /**
     * Issue 15 item 4: the admin APIs a single node answers trivially, as facts a run against
     * Apache Kafka gives too (the differential test compares them): DescribeTopicPartitions
     * (describeTopics, paged), ElectLeaders, Alter/ListPartitionReassignments,
     * AlterReplicaLogDirs to the current dir and to an unknown one, DescribeQuorum,
     * ListClientMetricsResources.
     */
    static ObjectNode clusterOps(JsonNode p) throws Exception {
        String topic = p.get("topic").asText();
        ObjectNode out = M.createObjectNode();
        try (Admin a = Admin.create(base(p))) {
            int node = a.describeCluster().controller().get().id();
            a.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
            // describeTopics goes through DescribeTopicPartitions; a limit of 2 makes it page.
            TopicDescription td = a.describeTopics(List.of(topic),
                new DescribeTopicsOptions().partitionSizeLimitPerResponse(2)).allTopicNames().get().get(topic);
            ArrayNode parts = out.putArray("described");
            for (TopicPartitionInfo tpi : td.partitions())
                parts.add(tpi.partition() + ":" + (tpi.leader().id() == node) + ":" + tpi.replicas().size()
                    + ":" + tpi.isr().size() + ":" + tpi.elr().size());
            out.put("described_internal", td.isInternal());
            out.put("describe_unknown", outcome(a.describeTopics(List.of(topic + "-nope")).allTopicNames()));
            TopicPartition p0 = new TopicPartition(topic, 0);
            TopicPartition missing = new TopicPartition(topic, 7);
            Map<TopicPartition, Optional<Throwable>> el = a.electLeaders(ElectionType.PREFERRED, Set.of(p0, missing)).partitions().get();
            out.put("elect_p0", el.get(p0).map(t -> t.getClass().getSimpleName()).orElse("ok"));
            out.put("elect_missing", el.get(missing).map(t -> t.getClass().getSimpleName()).orElse("ok"));
            Map<TopicPartition, Optional<Throwable>> unclean = a.electLeaders(ElectionType.UNCLEAN, Set.of(p0)).partitions().get();
            out.put("elect_unclean", unclean.get(p0).map(t -> t.getClass().getSimpleName()).orElse("ok"));
            Map<TopicPartition, Optional<Throwable>> all = a.electLeaders(ElectionType.PREFERRED, null).partitions().get();
            out.put("elect_all_results", all.size());

            out.put("reassign_same", outcome(a.alterPartitionReassignments(
                Map.of(p0, Optional.of(new NewPartitionReassignment(List.of(node))))).all()));
            out.put("reassign_unknown_broker", outcome(a.alterPartitionReassignments(
                Map.of(p0, Optional.of(new NewPartitionReassignment(List.of(node + 100))))).all()));
            out.put("reassign_cancel", outcome(a.alterPartitionReassignments(
                Map.of(p0, Optional.empty())).all()));
            out.put("reassign_missing", outcome(a.alterPartitionReassignments(
                Map.of(missing, Optional.of(new NewPartitionReassignment(List.of(node))))).all()));
            out.put("reassignments_listed", a.listPartitionReassignments().reassignments().get().size());
            out.put("reassignments_listed_named",
                a.listPartitionReassignments(Set.of(p0)).reassignments().get().size());

            String dir = dirOf(a, node, p0);
            TopicPartitionReplica r0 = new TopicPartitionReplica(topic, 0, node);
            out.put("log_dir_same", outcome(a.alterReplicaLogDirs(Map.of(r0, dir)).all()));
            out.put("log_dir_unknown", outcome(a.alterReplicaLogDirs(Map.of(r0, "/no/such/log/dir")).all()));

            QuorumInfo q = a.describeMetadataQuorum().quorumInfo().get();
            out.put("quorum_leader_is_node", q.leaderId() == node);
            out.put("quorum_voters", q.voters().size());
            out.put("quorum_voter_is_node", q.voters().get(0).replicaId() == node);
            out.put("quorum_voter_caught_up", q.voters().get(0).logEndOffset() >= q.highWatermark());
            out.put("quorum_hw_positive", q.highWatermark() > 0);
            out.put("quorum_observers", q.observers().size());
            @SuppressWarnings("deprecation")
            Collection<ClientMetricsResourceListing> cm = a.listClientMetricsResources().all().get();
            out.put("client_metrics_resources", cm.size());
            a.deleteTopics(List.of(topic)).all().get();
        }
        return out;
    }

    /**
     * ListConfigResources v1 (KIP-1142) per type, over this scenario's own topic and group and
     * the node (other scenarios' resources share the broker, so only these names are kept), and
     * AlterPartitionReassignments v1 (KIP-860) with replication-factor changes refused.
     */
    static ObjectNode configResources(JsonNode p) throws Exception {
        String topic = p.get("topic").asText(), group = p.get("group").asText();
        ObjectNode out = M.createObjectNode();
        try (Admin a = Admin.create(base(p))) {
            String node = String.valueOf(a.describeCluster().controller().get().id());
            a.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            a.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), List.of(
                new AlterConfigOp(new ConfigEntry("consumer.session.timeout.ms", "50000"), AlterConfigOp.OpType.SET))))
                .all().get();
            TopicPartition p0 = new TopicPartition(topic, 0);
            // A commit, so __consumer_offsets exists on both brokers.
            a.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(0))).all().get();
            java.util.function.Function<Collection<ConfigResource>, ArrayNode> mine = rs -> {
                ArrayNode arr = M.createArrayNode();
                rs.stream()
                    .filter(r -> r.name().equals(topic) || r.name().equals(group) || r.name().equals(node)
                        || r.name().equals("__consumer_offsets"))
                    .map(r -> r.type() + ":" + (r.name().equals(node) ? "node" : r.name()))
                    .sorted().forEach(arr::add);
                return arr;
            };
            ObjectNode byType = out.putObject("by_type");
            for (ConfigResource.Type t : List.of(ConfigResource.Type.TOPIC, ConfigResource.Type.BROKER,
                    ConfigResource.Type.BROKER_LOGGER, ConfigResource.Type.CLIENT_METRICS, ConfigResource.Type.GROUP))
                byType.set(t.toString(), mine.apply(a.listConfigResources(Set.of(t), new ListConfigResourcesOptions()).all().get()));
            out.set("all_types", mine.apply(a.listConfigResources().all().get()));
            out.set("topic_and_group", mine.apply(a.listConfigResources(
                Set.of(ConfigResource.Type.TOPIC, ConfigResource.Type.GROUP), new ListConfigResourcesOptions()).all().get()));
            out.put("unknown_type", outcome(a.listConfigResources(Set.of(ConfigResource.Type.UNKNOWN),
                new ListConfigResourcesOptions()).all()));
            @SuppressWarnings("deprecation")
            Collection<ClientMetricsResourceListing> cm = a.listClientMetricsResources().all().get();
            out.put("client_metrics_v0", cm.size());

            int nodeId = Integer.parseInt(node);
            AlterPartitionReassignmentsOptions fixedRf = new AlterPartitionReassignmentsOptions().allowReplicationFactorChange(false);
            out.put("reassign_same_fixed_rf", outcome(a.alterPartitionReassignments(
                Map.of(p0, Optional.of(new NewPartitionReassignment(List.of(nodeId)))), fixedRf).all()));
            out.put("reassign_unknown_broker_fixed_rf", outcome(a.alterPartitionReassignments(
                Map.of(p0, Optional.of(new NewPartitionReassignment(List.of(nodeId, nodeId + 100)))), fixedRf).all()));
            out.put("reassign_cancel_fixed_rf", outcome(a.alterPartitionReassignments(
                Map.of(p0, Optional.empty()), fixedRf).all()));
            a.deleteConsumerGroups(List.of(group)).all().get();
            a.deleteTopics(List.of(topic)).all().get();
        }
        return out;
    }

    /**
     * A group with a classic member and a consumer-protocol member (KIP-848 online upgrade):
     * describeConsumerGroups tells which member is upgraded (ConsumerGroupDescribe v1's
     * MemberType, KIP-1043); when the consumer-protocol member leaves, the group is classic
     * again and the classic member gets both partitions.
     */
    static ObjectNode mixedGroup(JsonNode p) throws Exception {
        String topic = p.get("topic").asText(), gid = p.get("group").asText();
        ObjectNode out = M.createObjectNode();
        try (Admin a = Admin.create(base(p))) {
            a.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get(15, TimeUnit.SECONDS);
            Map<String, String> classic = Map.of("group.id", gid, "group.protocol", "classic",
                "session.timeout.ms", "10000", "heartbeat.interval.ms", "300");
            Map<String, String> modern = Map.of("group.id", gid, "group.protocol", "consumer");
            try (KafkaConsumer<byte[], byte[]> c1 = consumer(p, classic)) {
                c1.subscribe(List.of(topic));
                long end = System.currentTimeMillis() + DEADLINE_MS;
                while (c1.assignment().size() != 2 && System.currentTimeMillis() < end) c1.poll(Duration.ofMillis(100));
                out.put("classic_alone", c1.assignment().size());
                try (KafkaConsumer<byte[], byte[]> c2 = consumer(p, modern)) {
                    c2.subscribe(List.of(topic));
                    end = System.currentTimeMillis() + DEADLINE_MS;
                    while ((c1.assignment().size() != 1 || c2.assignment().size() != 1) && System.currentTimeMillis() < end) {
                        c1.poll(Duration.ofMillis(50));
                        c2.poll(Duration.ofMillis(50));
                    }
                    out.put("mixed_assignments", c1.assignment().size() + "+" + c2.assignment().size());
                    ConsumerGroupDescription d = a.describeConsumerGroups(List.of(gid)).all().get().get(gid);
                    out.put("mixed_type", d.type().toString());
                    ArrayNode ms = out.putArray("mixed_members");
                    d.members().stream()
                        .map(m -> m.upgraded().map(String::valueOf).orElse("unknown") + ":" + m.assignment().topicPartitions().size())
                        .sorted().forEach(ms::add);
                }
                end = System.currentTimeMillis() + DEADLINE_MS;
                while (c1.assignment().size() != 2 && System.currentTimeMillis() < end) c1.poll(Duration.ofMillis(100));
                out.put("classic_again", c1.assignment().size());
                ConsumerGroupDescription d = a.describeConsumerGroups(List.of(gid)).all().get().get(gid);
                out.put("after_type", d.type().toString());
                ArrayNode ms = out.putArray("after_members");
                d.members().stream().map(m -> m.upgraded().map(String::valueOf).orElse("unknown")).sorted().forEach(ms::add);
            }
        }
        return out;
    }

    /**
     * AlterReplicaLogDirs as a real move (Skiff with two log.dirs): records produced before and
     * after the move read back in order, DescribeLogDirs follows the partition.
     */
    static ObjectNode logDirMove(JsonNode p) throws Exception {
        String topic = p.get("topic").asText();
        int before = p.get("before").asInt(), after = p.get("after").asInt();
        ObjectNode out = M.createObjectNode();
        Properties pc = base(p);
        pc.put("key.serializer", ByteArraySerializer.class.getName());
        pc.put("value.serializer", ByteArraySerializer.class.getName());
        try (Admin a = Admin.create(base(p)); KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(pc)) {
            int node = a.describeCluster().controller().get().id();
            if (p.path("create").asBoolean(true))
                a.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            for (int k = 0; k < before; k++) prod.send(new ProducerRecord<>(topic, 0, b("k" + k), b("v" + k))).get();
            TopicPartition p0 = new TopicPartition(topic, 0);
            out.put("dir_before", dirOf(a, node, p0));
            out.put("moved", outcome(a.alterReplicaLogDirs(
                Map.of(new TopicPartitionReplica(topic, 0, node), p.get("dest").asText())).all()));
            out.put("dir_after", dirOf(a, node, p0));
            for (int k = before; k < before + after; k++) prod.send(new ProducerRecord<>(topic, 0, b("k" + k), b("v" + k))).get();
        }
        try (KafkaConsumer<byte[], byte[]> c = consumer(p, Map.of())) {
            TopicPartition p0 = new TopicPartition(topic, 0);
            c.assign(List.of(p0));
            c.seekToBeginning(List.of(p0));
            ArrayNode values = out.putArray("values");
            int expect = p.path("expect").asInt(before + after);
            long end = System.currentTimeMillis() + DEADLINE_MS;
            while (values.size() < expect && System.currentTimeMillis() < end)
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200)))
                    values.add(r.offset() + "=" + s(r.value()));
        }
        return out;
    }

    static String dirOf(Admin a, int node, TopicPartition tp) throws Exception {
        for (Map.Entry<String, LogDirDescription> e : a.describeLogDirs(List.of(node)).allDescriptions().get().get(node).entrySet())
            if (e.getValue().replicaInfos().containsKey(tp)) return e.getKey();
        return null;
    }

    static ObjectNode admin(JsonNode p) throws Exception {
        String topic = p.get("topic").asText();
        String gid = p.get("group").asText();
        ObjectNode out = M.createObjectNode();
        try (Admin a = Admin.create(base(p))) {
            DescribeClusterResult dc = a.describeCluster();
            out.put("cluster_id", dc.clusterId().get());
            out.put("controller_id", dc.controller().get().id());
            ArrayNode nodes = out.putArray("nodes");
            for (Node nd : dc.nodes().get()) nodes.add(nd.host() + ":" + nd.port() + "#" + nd.id());

            NewTopic nt = new NewTopic(topic, 2, (short) 1).configs(Map.of("retention.ms", "7200000"));
            a.createTopics(List.of(nt)).all().get();
            try {
                a.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
                out.put("create_again", "ok");
            } catch (Exception e) {
                out.put("create_again", e.getCause().getClass().getSimpleName());
            }
            out.put("listed", a.listTopics().names().get().contains(topic));
            TopicDescription td = a.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            out.put("described_partitions", td.partitions().size());
            out.put("described_leader", td.partitions().get(0).leader().id());

            ConfigResource cr = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config cfg = a.describeConfigs(List.of(cr), new DescribeConfigsOptions().includeSynonyms(true))
                .all().get().get(cr);
            ObjectNode cfgs = out.putObject("configs");
            for (String name : List.of("retention.ms", "cleanup.policy", "segment.bytes")) {
                ConfigEntry e = cfg.get(name);
                if (e == null) continue;
                ObjectNode o = cfgs.putObject(name);
                o.put("value", e.value()).put("source", e.source().toString());
                ArrayNode syn = o.putArray("synonyms");
                for (ConfigEntry.ConfigSynonym sy : e.synonyms()) syn.add(sy.name() + "=" + sy.value() + "@" + sy.source());
            }
            a.incrementalAlterConfigs(Map.of(cr, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SET)))).all().get();
            Config after = a.describeConfigs(List.of(cr)).all().get().get(cr);
            for (long end = System.currentTimeMillis() + DEADLINE_MS;
                 !"compact".equals(after.get("cleanup.policy").value()) && System.currentTimeMillis() < end; ) {
                Thread.sleep(50); // Kafka applies the change a moment after answering (above)
                after = a.describeConfigs(List.of(cr)).all().get().get(cr);
            }
            out.put("altered_retention", after.get("retention.ms").value());
            out.put("altered_cleanup", after.get("cleanup.policy").value());
            a.incrementalAlterConfigs(Map.of(cr, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", ""), AlterConfigOp.OpType.DELETE)))).all().get();
            // Kafka applies a config change from its metadata log a moment after answering:
            // poll (with a deadline) until the delete shows, as an operator script would.
            ConfigEntry reverted = a.describeConfigs(List.of(cr)).all().get().get(cr).get("cleanup.policy");
            for (long end = System.currentTimeMillis() + DEADLINE_MS;
                 reverted.source() != ConfigEntry.ConfigSource.DEFAULT_CONFIG && System.currentTimeMillis() < end; ) {
                Thread.sleep(50);
                reverted = a.describeConfigs(List.of(cr)).all().get().get(cr).get("cleanup.policy");
            }
            out.put("deleted_cleanup", reverted.value() + "@" + reverted.source());

            a.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all().get();
            out.put("partitions_after_increase",
                a.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size());

            // 10 records on partition 0, 4 on partition 1.
            Properties pc = base(p);
            pc.put("key.serializer", ByteArraySerializer.class.getName());
            pc.put("value.serializer", ByteArraySerializer.class.getName());
            try (KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(pc)) {
                for (int k = 0; k < 14; k++)
                    prod.send(new ProducerRecord<>(topic, k < 10 ? 0 : 1, b("k" + k), b("v" + k))).get();
            }
            TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
            a.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(3))).all().get();
            ListOffsetsResult lo = a.listOffsets(Map.of(p0, OffsetSpec.earliest()));
            out.put("p0_earliest_after_delete", lo.partitionResult(p0).get().offset());
            out.put("p0_latest", a.listOffsets(Map.of(p0, OffsetSpec.latest())).partitionResult(p0).get().offset());
            out.put("p1_latest", a.listOffsets(Map.of(p1, OffsetSpec.latest())).partitionResult(p1).get().offset());

            Map<Integer, Map<String, LogDirDescription>> dirs =
                a.describeLogDirs(List.of(td.partitions().get(0).leader().id())).allDescriptions().get();
            long size0 = -1; int dirCount = 0; String dirErr = null;
            for (Map<String, LogDirDescription> m : dirs.values())
                for (LogDirDescription d : m.values()) {
                    dirCount++;
                    if (d.error() != null) dirErr = d.error().toString();
                    ReplicaInfo ri = d.replicaInfos().get(p0);
                    if (ri != null) size0 = ri.size();
                }
            out.put("log_dirs", dirCount);
            out.put("log_dir_error", dirErr);
            out.put("log_dir_p0_size", size0);

            // A classic group commits 7 on p0 and 4 on p1, then leaves.
            Map<String, String> extra = Map.of("group.id", gid, "group.protocol", "classic");
            try (KafkaConsumer<byte[], byte[]> c = consumer(p, extra)) {
                c.subscribe(List.of(topic));
                pollN(c, 11);
                c.commitSync(Map.of(p0, new OffsetAndMetadata(7), p1, new OffsetAndMetadata(4)));
                ArrayNode live = out.putArray("group_members_while_live");
                ConsumerGroupDescription g = a.describeConsumerGroups(List.of(gid)).all().get().get(gid);
                out.put("group_state_live", g.groupState().toString());
                out.put("group_type", g.type().toString());
                for (MemberDescription md : g.members()) live.add(md.clientId());
            }
            boolean listed = false;
            for (GroupListing gl : a.listGroups().all().get()) if (gl.groupId().equals(gid)) listed = true;
            out.put("group_listed", listed);
            boolean listedCg = false;
            for (ConsumerGroupListing gl : a.listConsumerGroups().all().get()) if (gl.groupId().equals(gid)) listedCg = true;
            out.put("consumer_group_listed", listedCg);
            ConsumerGroupDescription g = a.describeConsumerGroups(List.of(gid)).all().get().get(gid);
            out.put("group_state_after", g.groupState().toString());
            out.put("group_members_after", g.members().size());
            Map<TopicPartition, OffsetAndMetadata> offs =
                a.listConsumerGroupOffsets(gid).partitionsToOffsetAndMetadata().get();
            Map<TopicPartition, OffsetSpec> q = new HashMap<>();
            for (TopicPartition tp : offs.keySet()) q.put(tp, OffsetSpec.latest());
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends = a.listOffsets(q).all().get();
            ObjectNode lag = out.putObject("lag");
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offs.entrySet())
                lag.put(e.getKey().toString(), ends.get(e.getKey()).offset() - e.getValue().offset());

            a.deleteConsumerGroups(List.of(gid)).all().get();
            a.deleteTopics(List.of(topic)).all().get();
            long end = System.currentTimeMillis() + DEADLINE_MS;
            boolean gone = false;
            while (!gone && System.currentTimeMillis() < end) {
                gone = !a.listTopics().names().get().contains(topic);
                if (!gone) Thread.sleep(100);
            }
            out.put("deleted_topic_gone", gone);
        }
        return out;
    }
}
