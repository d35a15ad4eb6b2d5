/// The version every command's `--version` prints and the metrics carry as `llmspool_build_info`.
public enum BuildInfo {
    public static let version = "0.2.0"
}
