// seam-save-crasher: a child process for the SIGKILL test of saves across two store files.
//
//   seam-save-crasher DIR SEED
//
// Forever: either inserts a timer and its session in one save (two files), or deletes a timer,
// whose session goes with it by the cascade rule (two files again). After each save returns it
// prints "saved SEQUENCE insert|delete TIMER-UUID" and flushes, so the parent knows exactly what
// the context reported as saved when it kills this process.
import Foundation
import SeamContext
import SeamSchema
import SeamStore
import SeamTimers

let args = CommandLine.arguments
guard args.count == 3, let seed = UInt64(args[2]) else {
    FileHandle.standardError.write("usage: seam-save-crasher DIR SEED\n".data(using: .utf8)!)
    exit(64)
}
var random = SplitMix64(seed: seed)
do {
    var options = Context.Options()
    // Widen the window between the two files' commits, so that kills land in it often.
    options.betweenCommits = { usleep(3000) }
    let context = try Context(directory: args[1], schema: TimerApp.schema, options: options)
    var live = try context.fetch(FetchRequest("Timer", attributes: ["uuid"])).map(\.uuid)
    while true {
        var request = SaveRequest()
        let line: String
        if live.count > 5, random.next() % 3 == 0 {
            let index = Int(random.next() % UInt64(live.count))
            let uuid = live.remove(at: index)
            request.delete("Timer", uuid)
            line = "delete \(uuid)"
        } else {
            let timer = UUIDText.random(using: &random)
            request.insert("Timer", ["uuid": .uuid(timer), "name": .string("t\(random.next() % 1000)"),
                                     "steps": .json(#"[{"label":"a","seconds":5}]"#)])
            request.insert("Session", ["uuid": .uuid(UUIDText.random(using: &random)), "timerUUID": .uuid(timer),
                                       "startedAt": .date(Context.now()), "name": .string("copy")])
            live.append(timer)
            line = "insert \(timer)"
        }
        FileHandle.standardOutput.write("begin \(line)\n".data(using: .utf8)!)
        let set = try context.save(request, author: "cli")
        FileHandle.standardOutput.write("saved \(set?.sequence ?? -1) \(line)\n".data(using: .utf8)!)
    }
} catch {
    FileHandle.standardError.write("seam-save-crasher: \(error)\n".data(using: .utf8)!)
    exit(1)
}
