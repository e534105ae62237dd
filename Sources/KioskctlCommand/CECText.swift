import KioskControl

extension OutputsAnswer.Output.CEC {
    /// "TV standby (HDMI-CEC /dev/cec1)", "TV unknown (HDMI-CEC /dev/cec1): cec: no answer from the TV (…)".
    var text: String {
        "TV \(power) (HDMI-CEC \(adapter))" + (error.map { ": \($0)" } ?? "")
    }
}
