import SeamClient
import SeamCommandLine
import SeamJSON
import SeamStore
import SeamSystem
import SeamTimers

/// The migration worker, as seamd runs it (`--worker --stores A,B DIR`, with the broker's
/// socket on `SEAM_FD`): seamd has closed the stores; build verified copies of them from the
/// originals (read only), report progress, and hand the copies over with `Finished` — seamd
/// verifies them again and swaps them in. On failure, remove the copies and say why.
enum Worker {
    static func run(directory: String, stores: [String], options: MigrationOptions) -> Never {
        guard Environment.value("SEAM_FD") != nil else {
            Terminal.fail(tool, "--worker is how seamd runs this program; run `seam migrate` instead "
                          + "(or `seam-migrate DIR` while no seamd runs)", status: Terminal.usageError)
        }
        // Copies mean nothing without the seamd that will swap them in.
        guard Processes.dieWithParent() else { Terminal.fail(tool, "seamd, which started this worker, is gone") }
        let broker: SeamConnection
        do { broker = try SeamConnection.connect() } catch { Terminal.fail(tool, "cannot reach seamd: \(error)") }
        let directory = StoreDirectory(path: directory, schema: TimerApp.schema)
        do {
            let plan = try directory.planInService()
            let planned = StoreDirectory.touched(by: plan)
            guard planned == stores.sorted() else {
                throw WorkerError("seamd closed \(stores.joined(separator: ", ")) but the plan touches "
                                  + "\(planned.isEmpty ? "nothing" : planned.joined(separator: ", "))")
            }
            print("building copies: " + plan.files.map(\.from).joined(separator: "; "))
            let built = try directory.buildCopies(plan, options: options) { p in
                do { try broker.call("org.seam.Migration.Report", report(p)) } catch {
                    // seamd closed this connection: nobody will swap these copies in.
                    directory.removeCopies(stores)
                    Terminal.fail(tool, "lost seamd while copying: \(error)")
                }
            }
            print("built and verified: \(built.rowsDone) rows, \(built.bytesWritten) bytes; handing over")
            let reply = try broker.call("org.seam.Migration.Finished")
            let backups = reply["backups"]?.arrayValue?.compactMap(\.stringValue) ?? []
            print("seamd swapped the copies in; originals kept in " + backups.joined(separator: ", "))
            Terminal.exit(0)
        } catch {
            directory.removeCopies(stores)
            _ = try? broker.call("org.seam.Migration.Failed", ["message": .string("\(error)")])
            Terminal.fail(tool, "\(error)")
        }
    }

    static func report(_ p: MigrationProgress) -> JSONObject {
        ["phase": .string(p.phase.rawValue), "store": .string(p.configuration), "entity": p.entity.map(JSON.string) ?? .null,
         "rowsDone": .integer(Int64(p.rowsDone)), "rowsTotal": .integer(Int64(p.rowsTotal)),
         "bytesWritten": .integer(p.bytesWritten), "bytesTotal": .integer(p.bytesTotal)]
    }
}

struct WorkerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
