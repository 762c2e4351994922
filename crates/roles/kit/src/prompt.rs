//! The prompt-render policy, one for every role: a template that fails to
//! render fails the task with the template's error (a [`PhaseError`] naming
//! the template). A role never sends an empty prompt, nor the error text as
//! the prompt, nor a prompt of its own in place of the template's.

use serde::Serialize;
use wavecrew_backends::prompts::PromptError;
use wavecrew_core::role::PhaseError;

use crate::context::RoleContext;

/// The prompt of attempt `n`, given the previous attempt's error: an error
/// here (a template that does not render) fails the task.
pub type PromptFn<'a> = dyn Fn(u32, Option<&str>) -> Result<String, PhaseError> + Sync + 'a;

/// The task's error for a template that did not render:
/// ``prompt template `execution`: <what went wrong>``.
pub fn render_error(e: &PromptError) -> PhaseError {
    PhaseError::prompt(e.to_string())
}

/// The first prompt of a task's next attempt, before anything runs.
#[derive(Debug, Clone)]
pub struct Preview {
    /// The prompt, marked as [`RoleContext::render`] returns it.
    pub marked: String,
    /// The backend asked for.
    pub backend: String,
    /// The id the attempts are kept under (the task's, or one derived).
    pub attempts_id: wavecrew_core::TaskId,
}

/// A role that can say what the next attempt of a task would be sent,
/// without running anything (`wavecrew prompt`).
#[async_trait::async_trait]
pub trait PromptPreview: Send + Sync {
    /// The first prompt of `task`'s next attempt.
    async fn preview(&self, task: &wavecrew_core::Task) -> Result<Preview, PhaseError>;
}

impl RoleContext {
    /// Render template `name` with `context`, its long fields marked for
    /// the prompt budget each attempt applies. A template that fails to
    /// render, or renders nothing but blanks, is the task's error.
    pub fn render(&self, name: &str, context: &impl Serialize) -> Result<String, PhaseError> {
        let text = self
            .prompts
            .render_marked(name, context)
            .map_err(|e| render_error(&e))?;
        if wavecrew_backends::prompts::budget::unmarked(&text)
            .trim()
            .is_empty()
        {
            return Err(render_error(&PromptError {
                template: name.to_owned(),
                message: "it rendered an empty prompt".into(),
            }));
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::attempt::tests::context;

    #[test]
    fn a_template_that_fails_names_itself() {
        let (_dir, ctx) = context();
        // `execution` needs `task`, `cwd`, … (strict undefined).
        let e = ctx.render("execution", &json!({})).unwrap_err();
        assert!(
            e.message.starts_with("prompt template `execution`: "),
            "{e}"
        );
        let e = ctx.render("no-such-template", &json!({})).unwrap_err();
        assert!(
            e.message
                .starts_with("prompt template `no-such-template`: "),
            "{e}"
        );
    }
}
