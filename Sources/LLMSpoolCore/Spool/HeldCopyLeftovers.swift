import Foundation
import Glibc

/// Copies of held files (`SpoolLayout.heldCopyTemporary`) left by a daemon that died
/// making them, on any host: one untouched for `SpoolLayout.heldCopyLeftoverSeconds` is no
/// copy under way (a copy writes without pause). Swept at a daemon's start and with the
/// batch runner's sweeps of orphaned journals, so that a copy of a large output a killed
/// daemon left does not wait for the next start ten minutes later.
struct HeldCopyLeftovers {
    let layout: SpoolLayout
    let logger: Logger

    /// Removes the stale copies in the folders copies are made in; returns how many.
    func remove() -> Int {
        var removed = 0
        let now = Date().timeIntervalSince1970
        for directory in [layout.incoming, layout.batches] {
            let names: [String]
            do {
                names = try Syscall.listDirectory(directory).filter(SpoolLayout.isHeldCopyTemporary)
            } catch let error as SystemError where error.errno == ENOENT {
                continue
            } catch {
                logger.warning("cannot list a folder for copies left by a crash; they stay", ["folder": LogValue(directory), "reason": "\(error)"])
                continue
            }
            for name in names {
                let path = "\(directory)/\(name)"
                logger.bestEffort("removing a copy left by a crash") {
                    let info = try Syscall.lstat(path)
                    guard SpoolLayout.isHeldCopyLeftover(name, modified: Double(info.st_mtim.tv_sec), now: now) else { return }
                    if try Syscall.unlinkIfPresent(path) { removed += 1 }
                }
            }
        }
        return removed
    }
}
