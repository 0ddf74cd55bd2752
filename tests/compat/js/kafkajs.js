// kafkajs 2.2.4 (pinned in compat/package-lock.json) client commands: produce, fetch,
// admin create/delete/list topics, offsets by timestamp, topic offsets.
//
// Usage: node kafkajs.js COMMAND JSON (NODE_PATH=<repo>/compat/node_modules); prints ONE JSON
// line on stdout; kafkajs' own log goes to stderr.
//
// kafkajs has no assign(): its consumer only works through a consumer group, and groups come
// in a later issue. `fetch` therefore drives kafkajs' own cluster/broker layer (the objects its
// consumer uses: the same Metadata, ListOffsets and Fetch requests and the same RecordBatch
// decoder), reached through the Kafka object's private cluster factory.
//
// Message specs and results use strings for UTF-8 bytes and null for null. Headers are
// [[key, value]] lists; kafkajs models them as an object whose duplicate keys hold arrays, so
// duplicates must be adjacent to round-trip in order.

'use strict'

const { Kafka, logLevel } = require('kafkajs')

const toHeaders = pairs => {
  const out = {}
  for (const [k, v] of pairs || []) {
    if (Object.prototype.hasOwnProperty.call(out, k)) {
      out[k] = Array.isArray(out[k]) ? out[k].concat([v]) : [out[k], v]
    } else {
      out[k] = v
    }
  }
  return out
}

const str = b => (b == null ? null : Buffer.isBuffer(b) ? b.toString('utf8') : String(b))

const fromHeaders = headers => {
  const out = []
  for (const [k, v] of Object.entries(headers || {})) {
    if (Array.isArray(v)) v.forEach(x => out.push([k, str(x)]))
    else out.push([k, str(v)])
  }
  return out
}

const valueOf = m => (m.value_len !== undefined ? 'x'.repeat(m.value_len) : m.value)

const stderrLog = () => ({ namespace, level, log }) => {
  process.stderr.write(JSON.stringify({ level, namespace, message: log.message, error: log.error }) + '\n')
}

const client = p =>
  new Kafka({
    clientId: 'skiff-compat',
    brokers: [p.bootstrap],
    logLevel: logLevel.WARN,
    logCreator: stderrLog,
    retry: { retries: p.retries == null ? 5 : p.retries, initialRetryTime: 100 },
  })

const clusterOf = kafka => {
  const sym = Object.getOwnPropertySymbols(kafka).find(
    s => s.description === 'private:Kafka:createCluster'
  )
  if (!sym) throw new Error('kafkajs internals changed: no private cluster factory')
  return kafka[sym]({ allowAutoTopicCreation: false })
}

// Produces p.messages ({key, value | value_len, headers, partition, timestamp}) in one send()
// and returns one report per message: offset = partition base offset + its index there.
async function produce(p) {
  const producer = client(p).producer({ allowAutoTopicCreation: p.auto_create !== false })
  await producer.connect()
  const messages = p.messages.map(m => {
    const out = { key: m.key, value: valueOf(m), headers: toHeaders(m.headers) }
    if (m.partition != null) out.partition = m.partition
    if (m.timestamp != null) out.timestamp = String(m.timestamp)
    return out
  })
  let meta
  try {
    meta = await producer.send({ topic: p.topic, acks: p.acks == null ? -1 : p.acks, messages })
  } catch (e) {
    await producer.disconnect()
    return { error: e.type || e.name, message: e.message }
  }
  await producer.disconnect()
  const seen = {}
  const reports = p.messages.map(m => {
    const part = m.partition == null ? 0 : m.partition
    const md = meta.find(x => x.partition === part)
    const idx = (seen[part] = (seen[part] === undefined ? -1 : seen[part]) + 1)
    return {
      error: md.errorCode === 0 ? null : md.errorCode,
      partition: part,
      offset: Number(md.baseOffset) + idx,
      log_append_time: md.logAppendTime,
    }
  })
  return { reports }
}

// Fetches p.partition from p.offset (or {from_end: m} = high watermark - m) until the high
// watermark seen at start, keeping only records at or after the requested offset.
async function fetch(p) {
  const kafka = client(p)
  const cluster = clusterOf(kafka)
  await cluster.connect()
  await cluster.addTargetTopic(p.topic)
  const [{ partitions: offs }] = await cluster.fetchTopicsOffset([
    { topic: p.topic, fromBeginning: false, partitions: [{ partition: p.partition }] },
  ])
  const high = Number(offs[0].offset)
  let next = typeof p.offset === 'object' ? Math.max(0, high - p.offset.from_end) : p.offset
  const leader = cluster
    .findTopicPartitionMetadata(p.topic)
    .find(x => x.partitionId === p.partition).leader
  const broker = await cluster.findBroker({ nodeId: leader })
  const messages = []
  const deadline = Date.now() + (p.timeout_s || 20) * 1000
  while (next < high && Date.now() < deadline) {
    const resp = await broker.fetch({
      replicaId: -1,
      isolationLevel: 0,
      maxWaitTime: 200,
      minBytes: 1,
      maxBytes: 10485760,
      topics: [
        { topic: p.topic, partitions: [{ partition: p.partition, fetchOffset: String(next), maxBytes: 1048576 }] },
      ],
    })
    const part = resp.responses[0].partitions[0]
    if (part.errorCode !== 0) {
      await cluster.disconnect()
      return { error: part.errorCode, messages }
    }
    for (const m of part.messages) {
      const off = Number(m.offset)
      if (off < next || m.isControlRecord) continue
      messages.push({
        partition: p.partition,
        offset: off,
        key: str(m.key),
        value: p.values === false ? undefined : str(m.value),
        value_len: m.value == null ? null : m.value.length,
        headers: fromHeaders(m.headers),
        timestamp: Number(m.timestamp),
      })
      next = off + 1
    }
  }
  await cluster.disconnect()
  return { messages, high_watermark: high, eof: next >= high }
}

async function withAdmin(p, f) {
  const admin = client(p).admin()
  await admin.connect()
  try {
    return await f(admin)
  } finally {
    await admin.disconnect()
  }
}

// p.topics: [{name, partitions, config}] -> {created: bool} (kafkajs answers false for a topic
// that already exists) or {error}.
const adminCreate = p =>
  withAdmin(p, async admin => {
    try {
      const created = await admin.createTopics({
        validateOnly: !!p.validate_only,
        waitForLeaders: !p.validate_only,
        timeout: 10000,
        topics: p.topics.map(t => ({
          topic: t.name,
          numPartitions: t.partitions || 1,
          replicationFactor: 1,
          configEntries: Object.entries(t.config || {}).map(([name, value]) => ({ name, value })),
        })),
      })
      return { created }
    } catch (e) {
      return { error: e.type || e.name, message: e.message, errors: (e.errors || []).map(x => x.type) }
    }
  })

const adminDelete = p =>
  withAdmin(p, async admin => {
    try {
      await admin.deleteTopics({ topics: p.topics, timeout: 10000 })
      return { deleted: true }
    } catch (e) {
      const inner = e.cause || e.originalError
      const cause = inner ? inner.type || inner.name : null
      return { error: e.type || e.name, cause, message: e.message }
    }
  })

// {topics: {name: partition count}} from fetchTopicMetadata over listTopics().
const listTopics = p =>
  withAdmin(p, async admin => {
    const names = await admin.listTopics()
    const md = names.length ? await admin.fetchTopicMetadata({ topics: names }) : { topics: [] }
    const topics = {}
    for (const t of md.topics) topics[t.name] = t.partitions.length
    return { topics }
  })

const offsetsForTimes = p =>
  withAdmin(p, async admin => {
    const results = []
    for (const ts of p.timestamps) {
      const r = await admin.fetchTopicOffsetsByTimestamp(p.topic, ts)
      results.push(r.map(x => ({ partition: x.partition, offset: Number(x.offset) })))
    }
    return { results }
  })

const topicOffsets = p =>
  withAdmin(p, async admin => {
    const r = await admin.fetchTopicOffsets(p.topic)
    return { offsets: r.map(x => ({ partition: x.partition, low: Number(x.low), high: Number(x.high) })) }
  })

const commands = {
  produce,
  fetch,
  admin_create: adminCreate,
  admin_delete: adminDelete,
  list_topics: listTopics,
  offsets_for_times: offsetsForTimes,
  topic_offsets: topicOffsets,
}

const [cmd, json] = process.argv.slice(2)
if (!commands[cmd] || json === undefined) {
  process.stderr.write(`usage: kafkajs.js {${Object.keys(commands).join(',')}} JSON\n`)
  process.exit(2)
}
commands[cmd](JSON.parse(json)).then(
  result => {
    process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0))
  },
  err => {
    process.stderr.write(`${err && err.stack ? err.stack : err}\n`)
    process.exit(1)
  }
)
