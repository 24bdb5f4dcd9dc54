import SeamContext
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamSystem

/// The broker's side of big saves: a save in steps (`SteppedSaves`) told to subscribers and its
/// caller when it ends, and a big frame that may be a save read on a reader.
extension Broker: SteppedSavesHost {
    func charge(_ c: Connection, seconds: Double) { runnable.charge(Int(c.fd), seconds: seconds) }

    /// Tells subscribers, and the caller, how the save in steps ended. Its reply — a thousand
    /// changes took the loop 0.75 ms to write — is built on a reader; its caller waits for it.
    func stepsEnded(_ running: SteppedSaves.Stepping, _ result: Result<ChangeSet?, ContextError>) {
        let c = running.connection
        if case .success(let set?) = result {
            saves.publish(set)
            sync.noteCommit(set)
        }
        if context.hasNotices { reportStoreNotices() }
        if !c.closed {
            let id = running.id
            switch result {
            case .success(let set) where running.answers:
                // Only the changes to entities its caller may read, when it said which.
                let capabilities = c.hello.flatMap { $0.capabilities.reads == nil ? nil : $0.capabilities }
                let shape = running.request.reply
                answerLater(c, id: id) { _ in
                    .frame(SavePath.reply(set, id: id, shows: capabilities.map { caps in { caps.mayRead($0) } }, as: shape))
                }
            case .failure(let error) where running.answers:
                connections.send(Reply(WireRequests.error(error, in: running.request), id: id), to: c)
                resumeAfterRead(c)
            default:
                resumeAfterRead(c)
            }
        }
        writeGate.resumeHeldWrites()
    }

    // MARK: - Reading a big save off the loop

    /// Frames from this size are read on a reader when they may be a save: reading a 1,000-row
    /// save's frame took the loop 1.6–2.7 ms, the longest piece of such a save left on it.
    static let offLoopFrameBytes = 32 * 1024

    /// Reads `frame` of `c` — big, and perhaps a save — on a reader: its request comes back to
    /// the loop, which saves it as if it had read it itself (a frame that is not a plain save, or
    /// is not valid, is read on the loop as any other). The connection's later calls wait.
    func readBigSaveOffLoop(_ frame: ArraySlice<UInt8>, from c: Connection) {
        let schema = context.schema
        c.awaitingRead = true
        let started = metrics.start()
        onReader(for: c, { _ in
            let types: (Entity) -> [String: AttributeType] = { $0.attributeTypes }
            if let q = QuickSave(frame), let request = WireRequests.save(q, schema: schema, types: types) {
                return .readSave(.success(request), id: q.id, answers: true)
            }
            guard let json = try? JSON.decode(frame, limits: JSONLimits(maxDepth: Limits.maxJSONDepth)), let call = try? Call(json),
                  call.method == "org.seam.Store.Save"
            else { return .readSave(nil, id: nil, answers: true) }
            return .readSave(WireRequests.save(call.parameters, schema: schema, types: types), id: call.id, answers: !call.oneway)
        }, then: { [unowned self] outcome in
            c.awaitingRead = false
            guard !c.closed else { return }
            guard case .readSave(let read?, let id, let answers) = outcome, let hello = c.hello else {
                handleFrame(frame, from: c, readOffLoop: false)
                connections.flush(c)
                return resumeAfterRead(c)
            }
            // A store it writes may have begun to hold its writes meanwhile: it waits, as read.
            if writeGate.parkIfHeld(c, frame) { return }
            // Counted as the loop takes it on (a save in steps, when it begins), from the frame's arrival.
            switch read {
            case .success(let request):
                let reply = saves.save(request, author: hello.author, c, id: id, answers: answers)
                metrics.answered(Self.saveMethod, reply: reply, started: started)
                if answers { connections.send(frame: reply, to: c) }
            case .failure(let error):
                let reply = Reply(error, id: id).frame()
                metrics.answered(Self.saveMethod, reply: reply, started: started)
                if answers { connections.send(frame: reply, to: c) }
            }
            if context.hasNotices { reportStoreNotices() }
            connections.flush(c)
            if !c.awaitingRead { resumeAfterRead(c) }  // else it began a save in steps
        })
    }
}
