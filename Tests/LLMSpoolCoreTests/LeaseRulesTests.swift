import Foundation
import Glibc
import Testing
@testable import LLMSpoolCore

@Suite struct LeaseRulesTests {
    typealias Lease = LeaseRules.Lease
    let me = "h1:100:abc"

    @Test func aLeaseMeansWhatItsOwnerExpiryAndTombstoneSay() {
        func state(_ lease: Lease?, now: Double = 100) -> LeaseRules.State {
            LeaseRules.state(of: lease, me: me, now: now, margin: 10)
        }
        #expect(state(nil) == .absent)
        #expect(state(Lease(owner: me, expiresAt: 130)) == .mine)
        #expect(state(Lease(owner: me, expiresAt: 50)) == .mine, "ours even past expiry: the keeper decides")
        #expect(state(Lease(owner: "h2:7:x", expiresAt: 130)) == .heldElsewhere)
        #expect(state(Lease(owner: "h2:7:x", expiresAt: 95)) == .heldElsewhere, "within the margin")
        #expect(state(Lease(owner: "h2:7:x", expiresAt: 90)) == .expired, "expiry plus margin reached")
        #expect(state(Lease(owner: "h2:7:x", expiresAt: 130, ended: true)) == .ended)
        #expect(state(Lease(owner: me, expiresAt: 130, ended: true)) == .ended, "our own tombstone bars us too")
        #expect(state(Lease(owner: me, expiresAt: 99, ended: true)) == .expired, "a tombstone gets no margin")
    }

    @Test func aLeaseLetGoIsExpiredForEveryDaemonItsFormerOwnerIncluded() {
        let lease = Lease.lettingGo(owner: me)
        #expect(!lease.ended)
        #expect(LeaseRules.state(of: lease, me: me, now: 100, margin: 10) == .expired, "not ours: its next claim is a takeover")
        #expect(LeaseRules.state(of: lease, me: "h2:7:x", now: 100, margin: 10) == .expired)
        #expect(!LeaseRules.isDeadIncarnation(lease, hostID: "h1", myPID: 5, isAlive: { _ in false }), "nobody's run")
    }

    @Test func ownersSplitIntoHostAndPid() {
        #expect(Lease(owner: "h1:100:abc", expiresAt: 0).host == "h1")
        #expect(Lease(owner: "h1:100:abc", expiresAt: 0).pid == 100)
        #expect(Lease(owner: "fe80::1:42:ff", expiresAt: 0).host == "fe80::1", "host ids may hold colons")
        #expect(Lease(owner: "fe80::1:42:ff", expiresAt: 0).pid == 42)
        #expect(Lease(owner: "weird", expiresAt: 0).pid == nil)
        #expect(Lease(owner: "h:notapid:t", expiresAt: 0).pid == nil)
        #expect(!Lease(owner: LeaseRules.Lease.unreadablePrefix + "12", expiresAt: 0).isWritten)
        #expect(Lease(owner: me, expiresAt: 0).isWritten)
    }

    @Test func onlyADeadProcessOfThisHostIsAnEarlierRun() {
        let alive: (Int32) -> Bool = { $0 == 200 }
        #expect(LeaseRules.isDeadIncarnation(Lease(owner: "h1:300:t", expiresAt: 0), hostID: "h1", myPID: 100, isAlive: alive))
        #expect(!LeaseRules.isDeadIncarnation(Lease(owner: "h1:200:t", expiresAt: 0), hostID: "h1", myPID: 100, isAlive: alive), "alive")
        #expect(!LeaseRules.isDeadIncarnation(Lease(owner: "h1:100:t", expiresAt: 0), hostID: "h1", myPID: 100, isAlive: alive), "ourselves")
        #expect(!LeaseRules.isDeadIncarnation(Lease(owner: "h2:300:t", expiresAt: 0), hostID: "h1", myPID: 100, isAlive: alive), "another host")
        #expect(!LeaseRules.isDeadIncarnation(Lease(owner: "h1:300:t", expiresAt: 0, ended: true), hostID: "h1", myPID: 100, isAlive: alive),
                "a tombstone is no claim")
    }

    @Test func anExclusiveCreateRefusedWithEPERMIsJudgedByExistence() {
        #expect(LeaseRules.createFailure(errno: EEXIST, fileExists: { false }) == .exists)
        #expect(LeaseRules.createFailure(errno: EPERM, fileExists: { true }) == .exists, "sshfs")
        #expect(LeaseRules.createFailure(errno: EPERM, fileExists: { false }) == .failed)
        #expect(LeaseRules.createFailure(errno: EACCES, fileExists: { true }) == .exists)
        #expect(LeaseRules.createFailure(errno: EACCES, fileExists: { false }) == .failed)
        #expect(LeaseRules.createFailure(errno: ENOSPC, fileExists: { true }) == .failed)
    }

    @Test func cancelledNeverOverwritesAnEndedRecord() {
        #expect(LeaseRules.mayRecordCancelled(over: nil))
        #expect(LeaseRules.mayRecordCancelled(over: .active))
        #expect(LeaseRules.mayRecordCancelled(over: .cancelled))
        #expect(!LeaseRules.mayRecordCancelled(over: .done))
        #expect(!LeaseRules.mayRecordCancelled(over: .failed))
    }

    @Test func leftoversOfRequestsOthersHoldStay() {
        let dead: (Int32) -> Bool = { _ in false }
        func may(_ lease: Lease?, isAlive: (Int32) -> Bool = { _ in true }) -> Bool {
            LeaseRules.mayRemoveLeftover(lease: lease, me: me, hostID: "h1", myPID: 100, now: 100, margin: 10, isAlive: isAlive)
        }
        #expect(may(nil))
        #expect(!may(Lease(owner: "h2:7:x", expiresAt: 130)), "another daemon's, live")
        #expect(may(Lease(owner: "h2:7:x", expiresAt: 50)), "expired: whoever takes it over starts afresh")
        #expect(!may(Lease(owner: "h1:300:t", expiresAt: 130)), "our host, a live process")
        #expect(may(Lease(owner: "h1:300:t", expiresAt: 130), isAlive: dead), "our host's earlier run, dead")
        #expect(may(Lease(owner: "h2:7:x", expiresAt: 130, ended: true)), "ended: nobody writes it any more")
    }

    @Test func leftoverNamesGiveTheirIDs() {
        #expect(LeaseRules.leftoverID("q1.partial") == "q1")
        #expect(LeaseRules.leftoverID(".q1.json.tmp") == "q1")
        #expect(LeaseRules.leftoverID(".q1.error.json.tmp") == "q1")
        // A held file's copy is nobody's leftover while another daemon may be writing it.
        #expect(LeaseRules.leftoverID(String(SpoolLayout.heldCopyTemporary(in: "s/incoming", unique: "4.2").dropFirst("s/incoming/".count))) == nil)
        #expect(LeaseRules.leftoverID(".q1.sse.tmp") == "q1", "a prompt file's raw events while they arrive")
        #expect(LeaseRules.leftoverID(".q1.md.tmp") == "q1", "a transcript being written")
        #expect(LeaseRules.leftoverID("q1.json") == nil)
        #expect(LeaseRules.leftoverID("q1.sse") == nil)
        #expect(LeaseRules.leftoverID(".json.tmp") == nil)
        #expect(LeaseRules.leftoverID(".notes.tmp") == nil)
        #expect(LeaseRules.leftoverID(".x.partial") == nil)
    }
}

@Suite struct ClaimMethodTests {
    @Test func locksWhereTheFilesystemServesThemAndTheProbeAgrees() {
        func method(_ type: String, _ options: [String] = [], _ probe: ClaimMethod.Probe = .works) -> ClaimMethod {
            ClaimMethod.choose(filesystem: type, options: options, probe: probe).method
        }
        #expect(method("ext4") == .locks)
        #expect(method("tmpfs") == .locks)
        #expect(method("fuse.glusterfs") == .locks)
        #expect(method("nfs4") == .locks)
        #expect(method("ceph") == .locks)
        #expect(method("nfs") == .locks)
        #expect(method("nfs", ["rw", "nolock"]) == .leaseFiles)
        #expect(method("nfs", ["local_lock=all"]) == .leaseFiles)
        #expect(method("nfs4", ["local_lock=posix"]) == .leaseFiles, "local_lock keeps v4 locks local too")
        #expect(method("cifs") == .locks)
        #expect(method("cifs", ["nobrl"]) == .leaseFiles)
        #expect(method("fuse.sshfs") == .leaseFiles, "FUSE without a lock operation gets local locks that pass the probe")
        #expect(method("fuse.bindfs") == .leaseFiles)
        #expect(method("unknown") == .leaseFiles)
        #expect(method("fuse.glusterfs", [], .noConflict) == .leaseFiles)
        #expect(method("ext4", [], .failed(errno: ENOLCK)) == .leaseFiles)
        #expect(method("nfs4", [], .neverReleased) == .leaseFiles)
        #expect(ClaimMethod.choose(filesystem: "fuse.sshfs", options: [], probe: .works).reason.contains("fuse.sshfs"))
    }

    @Test func theMountHoldingAPathIsTheLongestPrefix() {
        let mountinfo = """
        22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
        40 22 0:35 / /mnt rw,relatime shared:2 - tmpfs tmpfs rw
        41 40 0:36 / /mnt/share rw,nosuid,nodev,relatime shared:3 - fuse.glusterfs 127.0.0.2:/vol rw,user_id=0,allow_other
        42 22 0:37 / /srv/my\\040spool rw,relatime shared:4 - nfs server:/x rw,vers=3,nolock
        43 22 0:38 / /mnt/sharedother rw - fuse.sshfs host:/ rw
        """
        #expect(ClaimMethod.mount(of: "/mnt/share/spool/state/leases", mountinfo: mountinfo)?.type == "fuse.glusterfs")
        #expect(ClaimMethod.mount(of: "/mnt/share", mountinfo: mountinfo)?.type == "fuse.glusterfs")
        #expect(ClaimMethod.mount(of: "/mnt/sharedother/x", mountinfo: mountinfo)?.type == "fuse.sshfs", "a prefix of the name is not a parent")
        #expect(ClaimMethod.mount(of: "/mnt/other", mountinfo: mountinfo)?.type == "tmpfs")
        #expect(ClaimMethod.mount(of: "/home/x", mountinfo: mountinfo)?.type == "ext4")
        let nfs = ClaimMethod.mount(of: "/srv/my spool/state", mountinfo: mountinfo)
        #expect(nfs?.type == "nfs", "mountinfo escapes spaces")
        #expect(nfs?.options.contains("nolock") == true, "superblock options count")
        #expect(ClaimMethod.mount(of: "/x", mountinfo: "garbage line\n") == nil)
    }
}

/// A request's file leaving `outgoing`: the clean-up of an end, or a withdrawal.
@Suite struct RemovalAfterAnEndTests {
    static let file = FileIdentity(device: 1, inode: 10, size: 100, modifiedNanoseconds: 2_000_000_123, contentHash: 0xabc)

    func record(_ status: TaskRecord.Status, _ request: FileIdentity?) -> TaskRecord {
        TaskRecord(id: "r", status: status, request: request, history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0)))
    }

    @Test func onlyAnEndedRecordOfTheSameFileMakesTheRemovalACleanUp() {
        let otherMount = FileIdentity(device: 2, inode: 99, size: 100, modifiedNanoseconds: 2_000_000_000, contentHash: 0xabc)
        let newer = FileIdentity(device: 1, inode: 11, size: 100, modifiedNanoseconds: 9_000_000_000, contentHash: 0xdef)
        for status in [TaskRecord.Status.done, .failed] {
            #expect(LeaseRules.removalFollowsAnEnd(record: record(status, Self.file), removed: Self.file))
            #expect(LeaseRules.removalFollowsAnEnd(record: record(status, Self.file), removed: otherMount), "the same file through another mount")
            #expect(!LeaseRules.removalFollowsAnEnd(record: record(status, Self.file), removed: newer), "a newer file of the same name")
            #expect(LeaseRules.removalFollowsAnEnd(record: record(status, Self.file), removed: nil), "unknown: the end stands")
            #expect(LeaseRules.removalFollowsAnEnd(record: record(status, nil), removed: newer), "an end without its file's identity stands")
        }
        for status in [TaskRecord.Status.active, .cancelled] {
            #expect(!LeaseRules.removalFollowsAnEnd(record: record(status, Self.file), removed: Self.file))
        }
        #expect(!LeaseRules.removalFollowsAnEnd(record: nil, removed: Self.file))
    }
}
