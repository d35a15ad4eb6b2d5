/// The sample requests `demo` drops, built into the binary so that it runs anywhere, not
/// only in the source tree. They are the files in spool/samples, which stay as examples.
enum DemoSamples {
    static let all: [(id: String, text: String)] = [
        ("hello", #"""
        {
          "model": "gpt-4o-mini",
          "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Say hello to the spool."}
          ]
        }
        """#),
        ("refused", #"""
        {
          "model": "gpt-4o-mini",
          "messages": [{"role": "user", "content": "The stub refuses this one on purpose, to show a failure record."}],
          "stub": {"status": 400}
        }
        """#),
        ("story", #"""
        {
          "model": "gpt-4o-mini",
          "stream": true,
          "stream_options": {"include_usage": true},
          "messages": [
            {"role": "user", "content": "Tell a very short story about a folder."}
          ]
        }
        """#),
    ]
}
