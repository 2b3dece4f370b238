//! placeholder
pub struct RunRequest {
    pub trees: Vec<String>,
    pub sets: String,
    pub reference: Option<String>,
    pub candidate: Option<String>,
    pub jobs: Option<usize>,
    pub timeout: std::time::Duration,
    pub json: Option<std::path::PathBuf>,
}
pub fn run(_r: RunRequest) -> anyhow::Result<u8> {
    todo!()
}
