// kafkajs 2.2.4 consumer-group commands (Usage: node groups_kafkajs.js COMMAND JSON; ONE JSON
// line on stdout, kafkajs' own log on stderr).
//
// members (p: bootstrap, topic, group, partitions, per_phase): the scenario of
// tests/compat/py/groups_common.py with kafkajs consumers: three members share the topic, one
// disconnects (LeaveGroup), the other two take its partitions, a new member joins and gets a
// share. Every member commits each record's next offset after processing it. A member's
// current share is the assignment of its latest GROUP_JOIN event.

'use strict'

const { Kafka, logLevel } = require('kafkajs')

const WAIT_MS = 25000

const stderrLog = () => ({ namespace, level, log }) => {
  process.stderr.write(JSON.stringify({ level, namespace, message: log.message, error: log.error }) + '\n')
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

async function waitFor (what, cond, errors) {
  const deadline = Date.now() + WAIT_MS
  while (Date.now() < deadline) {
    const v = cond()
    if (v) return v
    await sleep(20)
  }
  errors.push('timed out waiting for ' + what)
  return null
}

function balanced (members, partitions) {
  const shares = {}
  const owned = []
  for (const m of members) {
    shares[m.name] = [...m.assigned].sort((a, b) => a - b)
    owned.push(...shares[m.name])
  }
  owned.sort((a, b) => a - b)
  if (owned.length !== partitions || owned.some((p, i) => p !== i)) return null
  if (Object.values(shares).some(s => s.length === 0)) return null
  return shares
}

async function members (p) {
  const kafka = new Kafka({
    clientId: 'skiff-compat',
    brokers: [p.bootstrap],
    logLevel: logLevel.WARN,
    logCreator: stderrLog,
    retry: { retries: 10, initialRetryTime: 100 },
  })
  const consumed = []
  const produced = []
  const errors = []
  const snapshots = {}
  let commitFailures = 0

  const producer = kafka.producer()
  await producer.connect()
  const producePhase = async phase => {
    const messages = []
    for (let i = 0; i < p.per_phase; i++) {
      const value = `${p.group}-${phase}-${i}`
      produced.push(value)
      messages.push({ value, partition: i % p.partitions })
    }
    await producer.send({ topic: p.topic, messages })
  }
  const allConsumed = () => {
    const seen = new Set(consumed.map(c => c[3]))
    return produced.every(v => seen.has(v))
  }

  const start = async name => {
    const consumer = kafka.consumer({
      groupId: p.group,
      sessionTimeout: 6000,
      heartbeatInterval: 500,
      rebalanceTimeout: 10000,
      maxWaitTimeInMs: 200,
    })
    const m = { name, consumer, assigned: [] }
    consumer.on(consumer.events.GROUP_JOIN, e => {
      m.assigned = e.payload.memberAssignment[p.topic] || []
    })
    await consumer.connect()
    await consumer.subscribe({ topic: p.topic, fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        consumed.push([name, partition, Number(message.offset), message.value.toString()])
        try {
          await consumer.commitOffsets([
            { topic: p.topic, partition, offset: (BigInt(message.offset) + 1n).toString() },
          ])
        } catch (e) {
          commitFailures++
        }
      },
    })
    return m
  }

  await producePhase(0)
  const ms = [await start('m0'), await start('m1'), await start('m2')]
  snapshots.three = await waitFor('three members to share', () => balanced(ms, p.partitions), errors)
  await waitFor('phase 0 consumed', allConsumed, errors)

  const leaving = ms.splice(1, 1)[0]
  const t0 = Date.now()
  await leaving.consumer.disconnect()
  snapshots.two = await waitFor('two members to take over', () => balanced(ms, p.partitions), errors)
  const movedMs = Date.now() - t0
  await producePhase(1)
  await waitFor('phase 1 consumed', allConsumed, errors)

  ms.push(await start('m3'))
  snapshots.rejoined = await waitFor('the new member to get a share', () => balanced(ms, p.partitions), errors)
  await producePhase(2)
  await waitFor('phase 2 consumed', allConsumed, errors)
  for (const m of ms) await m.consumer.disconnect()
  await producer.disconnect()

  const admin = kafka.admin()
  await admin.connect()
  const committed = {}
  for (const t of await admin.fetchOffsets({ groupId: p.group, topics: [p.topic] })) {
    for (const part of t.partitions) committed[String(part.partition)] = Number(part.offset)
  }
  const endOffsets = {}
  for (const part of await admin.fetchTopicOffsets(p.topic)) {
    endOffsets[String(part.partition)] = Number(part.high)
  }
  await admin.disconnect()
  return {
    errors,
    snapshots,
    moved_ms: movedMs,
    produced,
    consumed,
    commit_failures: commitFailures,
    committed,
    end_offsets: endOffsets,
  }
}

const COMMANDS = { members }

async function main () {
  const [command, json] = process.argv.slice(2)
  if (!COMMANDS[command] || json === undefined) {
    process.stderr.write(`usage: groups_kafkajs.js {${Object.keys(COMMANDS).join(',')}} JSON\n`)
    process.exit(2)
  }
  const result = await COMMANDS[command](JSON.parse(json))
  process.stdout.write(JSON.stringify(result) + '\n')
  process.exit(0)
}

main().catch(e => {
  process.stderr.write(String((e && e.stack) || e) + '\n')
  process.exit(1)
})
